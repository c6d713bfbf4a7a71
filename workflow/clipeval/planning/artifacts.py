"""Every artifact's path, written once: rules name these as outputs, input functions fill them in.

The layout is in docs/ARCHITECTURE.md.
"""

import re
from pathlib import Path

from clipeval.experiments import experiment_dir
from clipeval.tasks import TASKS

RESULTS = Path("results")

# Shared by every experiment in the results folder, each under the key of
# what decides its content (planning/keys.py), never under a config's name
# for it: two experiments that define one thing share it whatever they call
# it, and two that give one name to different things write different files.
ARTIFACTS = {
    "dataset_images": "results/datasets/{dataset_key}/images.lmdb",
    "dataset_texts": "results/datasets/{dataset_key}/texts.jsonl",
    "dataset_labels": "results/datasets/{dataset_key}/labels.jsonl",
    "dataset_classes": "results/datasets/{dataset_key}/classes.json",
    "dataset_examples": "results/datasets/{dataset_key}/examples.jsonl",
    "dataset_meta": "results/datasets/{dataset_key}/meta.json",
    # Keyed by what decides the weights alone: another precision or preprocessing trains nothing again.
    "checkpoint": "results/checkpoints/{training_key}/checkpoint.pt",
    # What an epoch of a trained series leaves for the next to resume from (models/training.py).
    "training_state": "results/checkpoints/{training_key}/state.pt",
    "model_meta": "results/models/{model_key}/meta.json",
    # A folder: the images of one extraction shard as one preprocessing recipe makes them (features/pixel_files.py).
    # Shards of another size hold other images, so the size is part of the path.
    "pixel_shard": "results/pixels/{dataset_key}/{recipe}/by-{shard_size}/{shard}",
    "image_shard": "results/features/{model_key}/{dataset_key}/image-shards/by-{shard_size}/{shard}.jsonl",
    "image_features": "results/features/{model_key}/{dataset_key}/images.jsonl",
    "text_features": "results/features/{model_key}/{dataset_key}/texts.jsonl",
    # Written beside the text features by the same job (features/tokenization.py).
    "text_tokenization": "results/features/{model_key}/{dataset_key}/texts.tokenization.json",
    "class_features": "results/features/{model_key}/{dataset_key}/classes.jsonl",
    "predictions": "results/predictions/{model_key}/{dataset_key}/top-{top_k}/{direction}.jsonl",
}

# Each experiment's own files, under results/experiments/NAME/ (their logs
# are logs/STAGE/NAME…), by the names its config gives: what depends on its
# scoring settings and on which models it holds.
EXPERIMENT_OUTPUTS = {
    # Each task's score file and ranks record (score.smk).
    **{
        f"{task}_{kind}": f"scores/{{model}}/{{dataset}}/{task}{suffix}.json"
        for task in TASKS
        for kind, suffix in (("scores", ""), ("ranks", "-ranks"))
    },
    "comparisons": "comparisons/{dataset}.json",
    "suite_scores": "suites/{suite}.json",
    "summary_csv": "summary.csv",
    "summary_markdown": "summary.md",
    "averages": "averages.csv",
    "comparison_table": "comparisons.csv",
    "series_table": "series.csv",
    "group_table": "groups.csv",
    # The report's files (report.smk); each figure's numbers in the CSV or JSON beside it.
    "results_page": "report/results.html",
    "provenance_page": "report/provenance.html",
    "recall_curves": "report/{dataset}/recall-curves.png",
    "recall_curves_data": "report/{dataset}/recall-curves.csv",
    "rank_distribution": "report/{dataset}/rank-distribution.png",
    "rank_distribution_data": "report/{dataset}/rank-distribution.csv",
    "class_recall": "report/{dataset}/class-recall.png",
    "class_recall_data": "report/{dataset}/class-recall.csv",
    "choice_failures": "report/{dataset}/{model}/failures.png",
    "choice_failures_data": "report/{dataset}/{model}/failures.csv",
    "probe_plot": "report/{dataset}/probe-shots.png",
    "probe_plot_data": "report/{dataset}/probe-shots.csv",
    "suite_plot": "report/suites/{suite}.png",
    "suite_plot_data": "report/suites/{suite}.csv",
    "series_plot": "report/series/{series}.png",
    "series_plot_data": "report/series/{series}.csv",
    # TensorBoard takes each folder under tensorboard/ for a run of its own: `--logdir …/tensorboard`.
    "series_events": "tensorboard/{series}/events.out.tfevents.clipeval",
    "forest_plot": "report/{dataset}/comparisons.png",
    "forest_plot_data": "report/{dataset}/comparisons.csv",
    "t2i_failures": "report/{dataset}/{model}/failures-t2i.png",
    "t2i_failures_data": "report/{dataset}/{model}/failures-t2i.json",
    "i2t_failures": "report/{dataset}/{model}/failures-i2t.png",
    "i2t_failures_data": "report/{dataset}/{model}/failures-i2t.json",
    "confusion": "report/{dataset}/{model}/confusion.png",
    "confusion_data": "report/{dataset}/{model}/confusion.csv",
    "confused_pairs": "report/{dataset}/{model}/confused-pairs.png",
}


def experiment_artifact_pattern(experiment: str, name: str) -> str:
    """The path pattern of one of an experiment's own files, its wildcards left in."""
    return str(experiment_dir(RESULTS, experiment) / EXPERIMENT_OUTPUTS[name])


def artifact_path(experiment: str, name: str, **wildcards) -> str:
    """An artifact's path: a shared one's from its keys (model_key, dataset_key, …), an experiment's own from
    the names its config gives (model, dataset)."""
    pattern = experiment_artifact_pattern(experiment, name) if name in EXPERIMENT_OUTPUTS else ARTIFACTS[name]
    return pattern.format(**wildcards)


def names_matching(names) -> str:
    """A wildcard constraint matching exactly these names (or nothing)."""
    names = list(names)
    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"
