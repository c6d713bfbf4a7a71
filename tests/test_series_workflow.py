"""A checkpoint series through the real Snakemake: every file of a run's glob evaluated, the summary's table by
step with the best checkpoint marked, the report's figure, and a new checkpoint that plans only its own jobs."""

import csv
import json

import pytest
import yaml
from snakemake_runner import copy_workflow, planned_jobs, run_jobs
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(1)]

SERIES_CONFIG = {
    "experiment": "series",
    "datasets": {
        "shapes-test": {"format": "shapes", "task": "retrieval", "num_images": 60, "seed": 1},
        "shapes-classes": {"format": "shapes", "task": "classification", "num_images": 60, "seed": 2},
    },
    "models": {"run": {"arch": "clipeval-tiny", "checkpoints": "logs-of-training/run/checkpoints/epoch_*.pt"}},
    "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
    "metrics": {"bootstrap": 100},
}


def write_checkpoint(path, seed):
    """A clipeval-tiny checkpoint of random weights, as open_clip's training saves one."""
    import open_clip
    import torch

    import clipeval.models.open_clip_models  # noqa: F401  registers clipeval-tiny

    torch.manual_seed(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": seed, "state_dict": open_clip.create_model("clipeval-tiny").state_dict()}, path)


# The jobs one checkpoint adds: its description, the extraction of each dataset (images and texts of the
# retrieval set, images and class prompts of the classification set), knn both ways and the two scores.
ONE_CHECKPOINT = {
    "describe_model": 1,
    "extract_image_shard": 2,
    "gather_image_features": 2,
    "extract_text_features": 1,
    "encode_classes": 1,
    "knn": 2,
    "score_retrieval": 1,
    "score_classification": 1,
    "retrieval_failures": 1,
    "classification_failures": 1,
}
# What re-runs because the experiment lists one more model: each dataset's paired comparisons, its tables and
# its per-dataset figures.
EXPERIMENT_TABLES = {
    "compare_models": 2,
    "plot_comparisons": 2,
    "summary": 1,
    "report_tables": 1,
    "plot_retrieval": 1,
    "plot_classification": 1,
    "plot_series": 1,
    "all": 1,
}


def test_a_checkpoint_series_is_evaluated_by_step_and_a_new_checkpoint_adds_only_its_jobs(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    checkpoints = workdir / "logs-of-training/run/checkpoints"
    for epoch in (1, 2, 10):
        write_checkpoint(checkpoints / f"epoch_{epoch}.pt", epoch)
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(SERIES_CONFIG, sort_keys=False))
    run_jobs(workdir)

    experiment = workdir / "results/experiments/series"
    with open(experiment / "series.csv") as handle:
        table = list(csv.DictReader(handle))
    assert [(row["dataset"], row["step"], row["model"]) for row in table] == [
        (dataset, str(epoch), f"run.epoch_{epoch}")
        for dataset in ("shapes-test", "shapes-classes")
        for epoch in (1, 2, 10)
    ]
    for dataset, task, metric in (
        ("shapes-test", "retrieval", "mean_recall"),
        ("shapes-classes", "classification", "top1"),
    ):
        values = {
            epoch: json.loads((experiment / f"scores/run.epoch_{epoch}/{dataset}/{task}.json").read_text())[metric]
            for epoch in (1, 2, 10)
        }
        best = max(values, key=lambda epoch: (values[epoch], -epoch))
        rows = [row for row in table if row["dataset"] == dataset]
        assert [row["metric"] for row in rows] == [metric] * 3
        assert [float(row["value"]) for row in rows] == [round(values[epoch], 4) for epoch in (1, 2, 10)]
        assert [row["best"] for row in rows] == ["yes" if epoch == best else "no" for epoch in (1, 2, 10)]
    summary = (experiment / "summary.md").read_text()
    assert "## Checkpoint series" in summary and "**run** on **shapes-test**, mean recall by step:" in summary
    assert (experiment / "report/series/run.png").stat().st_size > 0
    with open(experiment / "report/series/run.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 6
    # TensorBoard's own reader finds each dataset's main metric at each step, as series.csv has it.
    events = EventAccumulator(str(experiment / "tensorboard/run"))
    events.Reload()
    for dataset, metric in (("shapes-test", "mean_recall"), ("shapes-classes", "top1")):
        scalars = [(event.step, event.value) for event in events.Scalars(f"{dataset}/{metric}")]
        expected = [(int(row["step"]), float(row["value"])) for row in table if row["dataset"] == dataset]
        assert scalars == [(step, pytest.approx(value, abs=1e-3)) for step, value in expected]

    write_checkpoint(checkpoints / "epoch_20.pt", 20)
    assert planned_jobs(workdir) == {**ONE_CHECKPOINT, **EXPERIMENT_TABLES}
    run_jobs(workdir)
    assert planned_jobs(workdir) == {}
    with open(experiment / "series.csv") as handle:
        assert [row["step"] for row in csv.DictReader(handle)] == ["1", "2", "10", "20"] * 2

    # A member is the entry a user would write by hand: that entry's features are the member's.
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    config["models"]["by-hand"] = {"arch": "clipeval-tiny", "pretrained": "logs-of-training/run/checkpoints/epoch_2.pt"}
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    planned = planned_jobs(workdir)
    assert not {"describe_model", "extract_image_shard", "extract_text_features", "encode_classes", "knn"} & set(
        planned
    )
    assert planned["score_retrieval"] == planned["score_classification"] == 1
