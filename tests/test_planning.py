"""The planning package without Snakemake: what a config evaluates and compares, the settings behind each
result, its checks with their exact messages, artifact paths, folder digests and code fingerprints.
tests/test_workflow_checks.py runs some of the same checks through Snakemake, as a user meets them."""

import copy
import json
import os
import time

import pytest
import yaml
from conftest import REPO

from clipeval.errors import ClipevalError
from clipeval.planning.artifacts import artifact_path, names_matching
from clipeval.planning.checks import (
    NAME,
    check_clock,
    check_comparisons,
    check_inputs,
    check_knn_depth,
    check_names,
    check_plan,
    check_references,
)
from clipeval.planning.codegraph import CodeGraph
from clipeval.planning.content_digests import file_digest, folder_digest
from clipeval.planning.fingerprints import code_fingerprint
from clipeval.planning.plan import ConfigError, Plan, fill_metric_defaults
from clipeval.planning.series import expand_checkpoint_series
from clipeval.tasks import TASKS

DEFAULTS = {
    "numerics": "portable",
    "extract": {"precision": "fp32"},
    "knn": {"top_k": 10},
    "metrics": {"recall_at": [1, 5, 10], "protocol": "full", "bootstrap": 1000, "bootstrap_seed": 0},
    "compare": {},
    "report": {"failures": 8, "shown": 5, "thumbnail_size": 96},
}
CONFIG = {
    **DEFAULTS,
    "datasets": {
        "train": {"format": "shapes", "task": "train", "num_images": 10, "seed": 0},
        "flickr": {"format": "cnclip", "task": "retrieval", "images": "f.tsv", "texts": "f.jsonl"},
        "coco": {
            "format": "cnclip",
            "task": "retrieval",
            "images": "c.tsv",
            "texts": "c.jsonl",
            "protocol": "folds-1k",
        },
        "cifar": {"format": "cifar", "task": "classification", "batch": "b/test_batch", "templates": "t.txt"},
    },
    "models": {
        "tiny": {
            "arch": "clipeval-tiny",
            "train": {"dataset": "train", "epochs": 1, "batch_size": 8, "lr": 0.1, "seed": 0},
        },
        "b32": {"arch": "ViT-B-32", "pretrained": "openai", "precision": "bf16", "preprocess": {"mean": [0, 0, 0]}},
        "given": {"features": {"flickr": {"images": "i.jsonl", "texts": "t.jsonl"}}},
    },
}


def plan_of(change=lambda config: None, files=("config/mine.yaml",)):
    config = copy.deepcopy(CONFIG)
    change(config)
    return Plan(config, list(files))


def test_every_model_on_every_dataset_of_its_tasks_in_config_order():
    plan = plan_of()
    assert plan.evaluation_pairs() == [
        ("tiny", "flickr"),
        ("tiny", "coco"),
        ("tiny", "cifar"),
        ("b32", "flickr"),
        ("b32", "coco"),
        ("b32", "cifar"),
        ("given", "flickr"),
    ]
    assert plan.evaluated_datasets("retrieval") == ["flickr", "coco"]
    assert plan.models_on("flickr") == ["tiny", "b32", "given"]
    assert plan.compared_models() == {
        "flickr": ["tiny", "b32", "given"],
        "coco": ["tiny", "b32"],
        "cifar": ["tiny", "b32"],
    }


def test_evaluate_and_a_baseline_narrow_the_pairs_and_comparisons():
    plan = plan_of(
        lambda c: c.update(
            evaluate=[{"model": "b32", "dataset": "cifar"}, {"model": "tiny", "dataset": "flickr"}],
            compare={"baseline": "given"},
        )
    )
    assert plan.evaluation_pairs() == [("b32", "cifar"), ("tiny", "flickr")]
    assert plan.compared_models() == {}
    assert plan_of(lambda c: c.update(compare={"baseline": "given"})).compared_models() == {
        "flickr": ["tiny", "b32", "given"]
    }


def test_a_score_job_reads_the_files_its_task_names_and_takes_its_settings():
    probe = {"shots": [1, 4], "seeds": 2, "validation": 0.25, "regularization": [0.1, 1], "max_iterations": 50}

    def change(config):
        config["metrics"].update(ranking_at=[10], allow_queries_without_positive=True)
        config["datasets"]["probed"] = {**config["datasets"]["cifar"], "task": "probe", "train_split": "cifar"}
        config["probe"] = probe

    plan = plan_of(change)
    metas = {"dataset_meta": "dataset", "model_meta": "model"}
    flickr = plan.score_inputs("given", "flickr")
    assert flickr == {
        "texts": plan.artifact("dataset_texts", dataset="flickr"),
        "image_feats": "i.jsonl",
        "text_feats": "t.jsonl",
        "dataset_meta": plan.artifact("dataset_meta", dataset="flickr"),
        "model_meta": plan.artifact("model_meta", model="given"),
        **{way: plan.artifact("predictions", model="given", dataset="flickr", direction=way) for way in ("t2i", "i2t")},
    }
    # Folds rank within each fold: knn's full-gallery lists are not read.
    assert list(plan.score_inputs("b32", "coco")) == ["texts", "image_feats", "text_feats", *metas]
    assert plan.score_options("coco") == [
        *("--protocol", "folds-1k", "--recall-at", "1", "5", "10", "--ranking-at", "10"),
        *("--allow-queries-without-positive", "--bootstrap", "1000", "--seed", "0"),
    ]
    assert plan.score_inputs("b32", "probed") == {
        "train_feats": plan.artifact("image_features", model="b32", dataset="cifar"),
        "train_labels": plan.artifact("dataset_labels", dataset="cifar"),
        "train_classes": plan.artifact("dataset_classes", dataset="cifar"),
        "image_feats": plan.artifact("image_features", model="b32", dataset="probed"),
        "labels": plan.artifact("dataset_labels", dataset="probed"),
        "classes": plan.artifact("dataset_classes", dataset="probed"),
        "dataset_meta": plan.artifact("dataset_meta", dataset="probed"),
        "model_meta": plan.artifact("model_meta", model="b32"),
    }
    assert plan.score_options("probed") == [
        *("--shots", "1", "4", "--seeds", "2", "--validation", "0.25", "--regularization", "0.1", "1.0"),
        *("--max-iterations", "50", "--bootstrap", "1000", "--seed", "0"),
    ]
    assert list(plan.score_inputs("b32", "cifar")) == ["image_feats", "class_feats", "labels", "classes", *metas]
    assert plan.score_options("cifar") == ["--bootstrap", "1000", "--seed", "0"]


def test_settings_behind_each_result():
    plan = plan_of()
    assert plan.experiment_name() == "mine"
    assert plan_of(lambda c: c.update(experiment="named")).experiment_name() == "named"
    assert not plan.checks_predictions("coco") and plan.checks_predictions("flickr")
    assert not plan.checks_predictions("cifar")
    assert plan.model_precision("b32") == "bf16" and plan.model_precision("tiny") == "fp32"
    train, trained = plan.dataset_keys["train"], plan.training_keys["tiny"]
    assert plan.checkpoint_of("tiny") == f"results/checkpoints/{trained}/checkpoint.pt"
    assert plan.checkpoint_of("b32") is None
    assert plan.scoring_settings("cifar") == {"metrics": {"bootstrap": 1000, "bootstrap_seed": 0}}
    assert plan.scoring_settings("coco") == {
        "metrics": {**DEFAULTS["metrics"], "protocol": "folds-1k"},
        "knn": {"top_k": 10},
    }
    assert plan.model_definition("b32") == {**CONFIG["models"]["b32"], "numerics": "portable"}
    # No names: a shared job is one job whatever a config calls its model and dataset.
    assert json.loads(plan.definition(["tiny"], "coco")) == {
        "models": [
            {
                **CONFIG["models"]["tiny"],
                "train": {**CONFIG["models"]["tiny"]["train"], "dataset": train},
                "precision": "fp32",
                "numerics": "portable",
            }
        ],
        "dataset": {"format": "cnclip", "images": "c.tsv", "texts": "c.jsonl"},  # task and protocol: how, not what
    }
    result = json.loads(plan.result_config("given", "flickr"))
    assert result["model"] == {"name": "given", "features": {"flickr": {"images": "i.jsonl", "texts": "t.jsonl"}}}
    assert "extract" not in result and json.loads(plan.result_config("b32", "flickr"))["extract"] == {
        "precision": "bf16"
    }
    record = plan.experiment_record()
    assert record["experiment"] == "mine" and record["config_files"] == ["config/mine.yaml"]
    assert list(record["scores"]) == [f"{m} on {d}" for m, d in plan.evaluation_pairs()]
    b32, flickr = plan.model_keys["b32"], plan.dataset_keys["flickr"]
    assert record["folders"]["datasets"]["flickr"] == f"results/datasets/{flickr}"
    assert record["folders"]["models"]["b32"] == f"results/models/{b32}"
    assert record["folders"]["checkpoints"] == {
        "tiny": f"results/checkpoints/{plan.training_keys['tiny']}/checkpoint.pt"
    }
    assert record["folders"]["features"]["b32 on flickr"] == f"results/features/{b32}/{flickr}"
    assert "given on flickr" not in record["folders"]["features"]  # its features are its own files
    # knn runs for the full protocol alone: coco is scored in folds.
    assert sorted(record["folders"]["predictions"]) == ["b32 on flickr", "given on flickr", "tiny on flickr"]
    assert record["folders"]["predictions"]["b32 on flickr"] == f"results/predictions/{b32}/{flickr}/top-10"


def test_the_files_and_folders_behind_a_job_and_their_content_reach_its_definition(tmp_path, monkeypatch):
    import huggingface_hub.constants

    snapshot = tmp_path / "hub/models--org--clip/snapshots/abc123"
    snapshot.mkdir(parents=True)
    (tmp_path / "hub/models--org--clip/refs").mkdir()
    (tmp_path / "hub/models--org--clip/refs/main").write_text("abc123")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    def add_models(config):
        config["models"].update(
            folder={"arch": "local-dir:weights/run1", "pretrained": ""},
            hub={"arch": "hf-hub:org/clip", "pretrained": ""},
            file={"arch": "clipeval-tiny", "pretrained": "weights/epoch_3.pt"},
        )
        config["datasets"]["images"] = {
            "format": "imagefolder",
            "task": "classification",
            "images": "classes",
            "classnames": "names.txt",
            "templates": "t.txt",
        }

    plan = plan_of(add_models)
    assert plan.model_inputs(["folder", "hub", "file", "given", "tiny"]) == [
        ("folder", "weights/run1"),
        ("folder", str(snapshot)),
        ("file", "weights/epoch_3.pt"),
        ("file", "i.jsonl"),
        ("file", "t.jsonl"),
    ]
    assert plan.dataset_inputs("flickr") == [("file", "f.tsv"), ("file", "f.jsonl")]
    assert plan.dataset_inputs("images") == [("file", "names.txt"), ("file", "t.txt"), ("folder", "classes")]
    digests = {"weights/epoch_3.pt": "one", "f.tsv": "two", "f.jsonl": "three"}

    def content(kind, path):
        return f"{kind} {digests[path]}"

    # A job reads the models' files itself; the dataset's sources only its prepare job reads.
    assert json.loads(plan.definition(["file"], "flickr", content))["content"] == {"weights/epoch_3.pt": "file one"}
    assert json.loads(plan.definition([], "flickr", content, reads_sources=True))["content"] == {
        "f.tsv": "file two",
        "f.jsonl": "file three",
    }


def test_a_model_folder_must_exist_and_a_hub_model_be_cached(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("f.tsv", "f.jsonl", "c.tsv", "c.jsonl", "t.txt", "i.jsonl", "t.jsonl", "b/test_batch"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).touch()
    relative = f"(relative to {tmp_path}, the working directory)"
    with pytest.raises(ConfigError) as error:
        check_inputs(plan_of(lambda c: c["models"].update(mine={"arch": "local-dir:run1", "pretrained": ""})))
    assert str(error.value) == f"models.mine.arch: folder run1 not found {relative}"
    with pytest.raises(ConfigError) as error:
        check_inputs(plan_of(lambda c: c["models"].update(mine={"arch": "hf-hub:org/clip", "pretrained": ""})))
    assert str(error.value) == (
        f"models.mine.arch: org/clip is not in the Hugging Face cache ({tmp_path}/hub/models--org--clip):"
        " download it first (hf download org/clip), so that its files are known before anything runs"
    )
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1/open_clip_config.json").write_text("{}")
    (tmp_path / "hub/models--org--clip/refs").mkdir(parents=True)
    (tmp_path / "hub/models--org--clip/refs/main").write_text("abc123")
    (tmp_path / "hub/models--org--clip/snapshots/abc123").mkdir(parents=True)
    check_inputs(
        plan_of(
            lambda c: c["models"].update(
                mine={"arch": "local-dir:run1", "pretrained": ""}, hub={"arch": "hf-hub:org/clip", "pretrained": ""}
            )
        )
    )


def test_paths_and_options():
    plan = plan_of()
    b32, flickr, cifar = plan.model_keys["b32"], plan.dataset_keys["flickr"], plan.dataset_keys["cifar"]
    assert plan.artifact("predictions", model="b32", dataset="flickr", direction="t2i") == (
        f"results/predictions/{b32}/{flickr}/top-10/t2i.jsonl"
    )
    assert plan.artifact("summary_csv") == "results/experiments/mine/summary.csv"
    assert artifact_path("x", "forest_plot", dataset="d") == "results/experiments/x/report/d/comparisons.png"
    assert (
        plan.experiment_artifact("t2i_failures") == "results/experiments/mine/report/{dataset}/{model}/failures-t2i.png"
    )
    assert plan.feature_files("given", "flickr") == {"images": "i.jsonl", "texts": "t.jsonl"}
    tiny = plan.model_keys["tiny"]
    assert plan.feature_files("tiny", "cifar")["classes"] == f"results/features/{tiny}/{cifar}/classes.jsonl"
    assert plan.score_file("tiny", "cifar", "ranks") == (
        "results/experiments/mine/scores/tiny/cifar/classification-ranks.json"
    )
    assert plan_of(lambda c: c["extract"].update(shard_size=500)).artifact(
        "pixel_shard", dataset="cifar", recipe="r", shard=3
    ) == (f"results/pixels/{cifar}/r/by-500/3")
    assert plan.prepare_options("flickr") == ["--images", "f.tsv", "--texts", "f.jsonl"]
    assert plan.preprocess_option("b32") == ["--preprocess", '{"mean": [0, 0, 0]}']
    assert plan.preprocess_option("tiny") == []
    assert plan.interval_options() == ["--bootstrap", "1000", "--seed", "0"]
    assert plan.comparison_options("coco") == ["--names", "tiny", "b32"]
    assert plan_of(lambda c: c.update(compare={"baseline": "b32"})).comparison_options("coco") == (
        ["--names", "tiny", "b32", "--baseline", "b32"]
    )
    retrieval_gallery, choice_gallery = TASKS["retrieval"].report_jobs[1], TASKS["compositionality"].report_jobs[0]
    assert plan.report_options(retrieval_gallery) == ["--failures", "8", "--shown", "5", "--thumbnail", "96"]
    assert plan.report_options(choice_gallery) == ["--failures", "8", "--thumbnail", "96"]
    assert plan.report_options(TASKS["retrieval"].report_jobs[0]) == []
    assert names_matching(["a.b", "c"]) == r"a\.b|c" and names_matching([]) == "(?!x)x"


def test_metric_defaults_fill_recall_at_ranking_at_then_top_k_from_recall_at():
    config = {"metrics": {}, "knn": {}}
    fill_metric_defaults(config)
    assert config == {"metrics": {"recall_at": [1, 5, 10], "ranking_at": [10]}, "knn": {"top_k": 10}}
    config = {"metrics": {"recall_at": [1], "ranking_at": [100]}, "knn": {}}
    fill_metric_defaults(config)
    assert config["knn"]["top_k"] == 1
    config = {"metrics": {"recall_at": [1, 50]}, "knn": {"top_k": 7}}
    fill_metric_defaults(config)
    assert config["knn"]["top_k"] == 7


RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters"


@pytest.mark.parametrize(
    "change, files, message",
    [
        (
            lambda c: c["datasets"].update({"flickr\n": c["datasets"].pop("flickr")}),
            ("config/mine.yaml",),
            f"datasets: 'flickr\\n' is not a usable name ({RULE})",
        ),
        (
            lambda c: c["models"].update({"m" * 101: c["models"].pop("tiny")}),
            ("config/mine.yaml",),
            f"models: '{'m' * 101}' is not a usable name ({RULE})",
        ),
        (
            lambda c: c.update(experiment="x$(touch X)"),
            ("config/mine.yaml",),
            f"experiment: 'x$(touch X)' is not a usable name ({RULE})",
        ),
        (
            lambda c: None,
            ("config/x$(touch X).yaml",),
            f"config/x$(touch X).yaml: the experiment takes this file's name, 'x$(touch X)', which is not a usable"
            f" name ({RULE}); set `experiment:` in it",
        ),
        (
            lambda c: None,
            ("config/my exp.yaml",),
            f"config/my exp.yaml: the experiment takes this file's name, 'my exp', which is not a usable name"
            f" ({RULE}); set `experiment:` in it",
        ),
        (
            lambda c: None,
            ("config/...yaml",),
            f"config/...yaml: the experiment takes this file's name, '..', which is not a usable name ({RULE});"
            " set `experiment:` in it",
        ),
    ],
)
def test_names_that_become_paths_and_command_words_are_checked_with_one_line(change, files, message):
    with pytest.raises(ConfigError) as error:
        check_names(plan_of(change, files))
    assert str(error.value) == message


def test_usable_names_pass_and_the_schema_states_the_same_rule():
    check_names(plan_of(lambda c: c["models"].update({"m" * 100: c["models"].pop("tiny")})))
    check_names(plan_of(files=("config/Exp_1.2-b.yaml",)))
    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    assert schema["$defs"]["name"]["pattern"] == f"^{NAME.pattern}$"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c["models"]["tiny"].update(arch="cn-clip:ViT-B-16"),
            "models.tiny.train: clipeval trains open_clip archs only, not 'cn-clip:ViT-B-16': give this model's"
            " weights (pretrained) instead",
        ),
        (
            lambda c: c["models"]["tiny"].update(arch="hf-transformers:weights/siglip"),
            "models.tiny.train: clipeval trains open_clip archs only, not 'hf-transformers:weights/siglip': give"
            " this model's weights (pretrained) instead",
        ),
        (
            lambda c: c["models"]["tiny"]["train"].update(dataset="nowhere"),
            "models.tiny.train.dataset: unknown dataset 'nowhere' (known: train, flickr, coco, cifar)",
        ),
        (
            lambda c: c["datasets"]["cifar"].update(task="probe_train", groups=["region"]),
            "datasets.cifar.groups: only a dataset of task classification is scored by group (this one's task is"
            " probe_train)",
        ),
        (
            lambda c: c["models"]["tiny"]["train"].update(precision="bf16"),
            "models.tiny.train.precision: bf16 on the CPU is outside numerics: portable, whose training is the same"
            " bits on every CPU: train in fp32, on a GPU (device: cuda), or under numerics: native",
        ),
        (
            lambda c: c.update(evaluate=[{"model": "tiny", "dataset": "train"}]),
            "evaluate[0].dataset: dataset 'train' has task 'train', which is not evaluated",
        ),
        (
            lambda c: c.update(evaluate=[{"model": "ghost", "dataset": "flickr"}]),
            "evaluate[0].model: unknown model 'ghost' (known: tiny, b32, given)",
        ),
        (
            lambda c: c.update(evaluate=[{"model": "given", "dataset": "cifar"}]),
            "evaluate[0]: model 'given' has no features for dataset 'cifar'",
        ),
        (
            lambda c: c.update(
                evaluate=[{"model": "tiny", "dataset": "flickr"}, {"model": "b32", "dataset": "coco"}] * 2
            ),
            "evaluate[2]: model 'tiny' on dataset 'flickr' is listed twice (also evaluate[0])",
        ),
        (
            lambda c: c.update(suites={"mine": ["flickr", "nowhere"]}),
            "suites.mine[1]: unknown dataset 'nowhere' (known: train, flickr, coco, cifar)",
        ),
        (
            lambda c: c.update(suites={"mine": ["train"]}),
            "suites.mine[0]: dataset 'train' has task 'train', which is not evaluated",
        ),
        (
            lambda c: c.update(evaluate=[{"model": "tiny", "dataset": "flickr"}], suites={"mine": ["flickr", "cifar"]}),
            "suites.mine: no model is evaluated on every one of its datasets",
        ),
        (
            lambda c: (c.update(suites={"mine": ["cifar", "flickr"]}), c["metrics"].update(recall_at=[1, 5])),
            "suites.mine: averages the mean recall of flickr, which needs 1, 5 and 10 in metrics.recall_at",
        ),
        (
            lambda c: (
                c.update(suites={"mine": ["cifar", "flickr"]}),
                c["metrics"].update(recall_at=[5, 10]),
                c["datasets"]["flickr"].update(published="flickr30k"),
            ),
            "suites.mine: averages the mean R@1 of flickr (its benchmark's metric), which needs 1 in metrics.recall_at",
        ),
        (
            lambda c: c["datasets"]["cifar"].update(published="fairness/dollar_street"),
            "datasets.cifar.published: fairness/dollar_street is scored by its worst income_ds group: name income_ds"
            " in the dataset's groups",
        ),
        (
            lambda c: c["datasets"]["flickr"].update(published="imagenet1k"),
            "datasets.flickr.published: imagenet1k is a classification benchmark, and this dataset's task is"
            " retrieval: its published numbers would not be this dataset's",
        ),
        (
            lambda c: c.update(compare={"baseline": "ghost"}),
            "compare.baseline: unknown model 'ghost' (known: tiny, b32, given)",
        ),
        (
            lambda c: c["models"]["given"].update(features={"nowhere": {"images": "i.jsonl", "texts": "t.jsonl"}}),
            "models.given.features.nowhere: unknown dataset 'nowhere' (known: train, flickr, coco, cifar)",
        ),
        (
            lambda c: c["models"]["given"].update(features={"flickr": {"images": "i.jsonl"}}),
            "models.given.features.flickr: a retrieval dataset needs 'texts' features",
        ),
        (
            lambda c: c["models"]["given"].update(features={"train": {"images": "i.jsonl"}}),
            "models.given.features.train: dataset 'train' has task 'train', which is not evaluated",
        ),
    ],
)
def test_references_to_other_entries_are_checked_with_one_line(change, message):
    with pytest.raises(ConfigError) as error:
        check_references(plan_of(change))
    assert str(error.value) == message


def test_knn_must_reach_the_largest_k_only_where_it_runs():
    check_knn_depth(plan_of())
    shallow = plan_of(lambda c: c["knn"].update(top_k=5))
    with pytest.raises(ConfigError, match=r"^knn.top_k: 5 is too few: R@10 needs at least 10 predictions$"):
        check_knn_depth(shallow)
    folds_only = plan_of(lambda c: (c["knn"].update(top_k=5), c.update(evaluate=[{"model": "b32", "dataset": "coco"}])))
    check_knn_depth(folds_only)


def test_a_comparison_job_of_more_pairs_than_it_makes_is_refused_naming_compare_baseline():
    """5,000 checkpoints' pairs made one comparison job of 12.5 million, planned without a word."""

    def models(count):
        return lambda c: c["models"].update(
            {f"m{index}": {"arch": "RN50", "pretrained": "openai"} for index in range(count)}
        )

    check_comparisons(plan_of(models(97)))  # 100 models on flickr: 4,950 pairs
    with pytest.raises(ConfigError) as error:
        check_comparisons(plan_of(models(98)))
    assert str(error.value) == (
        "compare: 101 models on flickr make 5,050 paired comparisons in one job, more than the 5,000 it makes: set"
        " compare.baseline to compare each model with one"
    )
    check_comparisons(plan_of(lambda c: (models(98)(c), c["compare"].update(baseline="b32"))))


def test_every_named_file_and_folder_must_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    relative = f"(relative to {tmp_path}, the working directory)"
    with pytest.raises(ConfigError) as error:
        check_inputs(plan_of())
    assert str(error.value) == f"datasets.flickr.images: file f.tsv not found {relative}"
    for name in ("f.tsv", "f.jsonl", "c.tsv", "c.jsonl", "t.txt", "i.jsonl", "t.jsonl"):
        (tmp_path / name).touch()
    (tmp_path / "b").mkdir()
    (tmp_path / "b/test_batch").touch()
    check_inputs(plan_of())
    with pytest.raises(ConfigError) as error:
        check_inputs(
            plan_of(lambda c: c["models"].update(mine={"arch": "clipeval-tiny", "pretrained": "weights/mine.pt"}))
        )
    assert str(error.value) == f"models.mine.pretrained: file weights/mine.pt not found {relative}"
    absolute = tmp_path / "elsewhere/mine.pt"
    with pytest.raises(ConfigError) as error:
        check_inputs(plan_of(lambda c: c["models"].update(mine={"arch": "clipeval-tiny", "pretrained": str(absolute)})))
    assert str(error.value) == f"models.mine.pretrained: file {absolute} not found"
    with pytest.raises(ConfigError) as error:
        check_inputs(plan_of(lambda c: c["models"]["tiny"]["train"].update({"from": "start/tiny.pt"})))
    assert str(error.value) == f"models.tiny.train.from: file start/tiny.pt not found {relative}"
    check_inputs(plan_of(lambda c: c["models"]["tiny"]["train"].update({"from": "openai"})))  # a tag
    # A checkpoint this config trains is made by the workflow, not looked for.
    trained = plan_of().artifact("checkpoint", model="tiny")
    check_inputs(plan_of(lambda c: c["models"].update(again={"arch": "clipeval-tiny", "pretrained": trained})))
    check_plan(plan_of())


@pytest.mark.parametrize(
    "prefix, marker", [("local-dir:", "open_clip_config.json"), ("hf-transformers:", "config.json")]
)
def test_a_model_folder_without_its_config_is_refused_before_any_file_of_it_is_read(
    tmp_path, monkeypatch, prefix, marker
):
    """`local-dir:/etc` passed the start check, and planning hashed every file of /etc."""
    monkeypatch.chdir(tmp_path)
    for name in ("f.tsv", "f.jsonl", "c.tsv", "c.jsonl", "t.txt", "i.jsonl", "t.jsonl"):
        (tmp_path / name).touch()
    (tmp_path / "b").mkdir()
    (tmp_path / "b/test_batch").touch()
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "secrets.txt").write_text("")
    plan = plan_of(lambda c: c["models"].update(mine={"arch": f"{prefix}{folder}", "pretrained": ""}))
    with pytest.raises(ConfigError) as error:
        check_inputs(plan)
    assert str(error.value) == f"models.mine.arch: {folder} holds no {marker}, so it is no {prefix} model folder"
    (folder / marker).write_text("{}")
    check_inputs(plan)


def test_a_file_dated_ahead_of_the_clock_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.tsv").touch()
    (tmp_path / "results/features").mkdir(parents=True)
    (tmp_path / "results/features/t.jsonl").touch()
    now = time.time_ns()
    check_clock(plan_of(), now_ns=now)
    os.utime("f.tsv", ns=(now, now + 10**9))  # within what a network file system's clock may lead by
    check_clock(plan_of(), now_ns=now)
    os.utime("f.tsv", ns=(now, now + 10**10))
    with pytest.raises(
        ConfigError, match=r"^f\.tsv: dated .*: once the clocks agree, date it now with touch -c -h -d now f\.tsv$"
    ):
        check_clock(plan_of(), now_ns=now)
    os.utime("f.tsv", ns=(now, now))
    os.symlink(tmp_path / "f.tsv", "results/features/link.jsonl")
    os.utime("results/features/link.jsonl", ns=(now, now + 10**10), follow_symlinks=False)
    with pytest.raises(ConfigError, match=r"^results/features/link\.jsonl: dated .* \(every such result: find results"):
        check_clock(plan_of(), now_ns=now)


def test_shared_artifacts_are_keyed_by_what_they_are_not_by_what_a_config_calls_them():
    plan = plan_of()
    renamed = plan_of(
        lambda c: (
            c["datasets"].update(flickr30k=c["datasets"].pop("flickr"), shapes=c["datasets"].pop("train")),
            c["models"].update(vitb32=c["models"].pop("b32")),
            c["models"]["tiny"]["train"].update(dataset="shapes"),
            c["models"]["given"].update(features={"flickr30k": c["models"]["given"]["features"]["flickr"]}),
        )
    )
    for section, same in (("dataset", ("flickr", "flickr30k")), ("dataset", ("train", "shapes"))):
        assert plan.dataset_keys[same[0]] == renamed.dataset_keys[same[1]], section
    assert plan.model_keys["b32"] == renamed.model_keys["vitb32"]
    assert plan.model_keys["tiny"] == renamed.model_keys["tiny"]  # trained on the same data under another name
    assert plan.model_keys["given"] == renamed.model_keys["given"]
    # A default written out is the same definition; how a dataset is scored is not part of it.
    spelt_out = plan_of(lambda c: c["datasets"]["train"].update(first_image_id=0, task="retrieval"))
    assert spelt_out.dataset_keys["train"] == plan.dataset_keys["train"]
    # Another definition under the same name gets other files, and so does everything made from it.
    other = plan_of(lambda c: c["datasets"]["train"].update(seed=1))
    assert other.dataset_keys["train"] != plan.dataset_keys["train"]
    assert other.model_keys["tiny"] != plan.model_keys["tiny"] and other.model_keys["b32"] == plan.model_keys["b32"]
    for changed in (
        lambda c: c["models"]["b32"].update(precision="fp32"),
        lambda c: c.update(numerics="native"),
        lambda c: c["models"]["b32"].update(preprocess={"mean": [1, 1, 1]}),
    ):
        assert plan_of(changed).model_keys["b32"] != plan.model_keys["b32"]
    # Settings that only scoring reads leave every shared artifact where it was.
    rescored = plan_of(lambda c: c["metrics"].update(bootstrap=10, recall_at=[1, 2]))
    assert (rescored.dataset_keys, rescored.model_keys) == (plan.dataset_keys, plan.model_keys)
    assert [plan.dataset_named(key) for key in plan.dataset_keys.values()] == list(CONFIG["datasets"])
    twice = plan_of(lambda c: c["models"].update(again=dict(c["models"]["b32"])))
    assert twice.model_named(twice.model_keys["again"]) == "b32"  # the first name of a definition stands for it


def test_a_folder_digest_follows_content_not_times(tmp_path):
    root, cache = tmp_path / "images", tmp_path / "cache"
    (root / "a").mkdir(parents=True)
    (root / "a/1.png").write_bytes(b"one")
    (root / "2.png").write_bytes(b"two")
    first = folder_digest(root, cache)
    assert folder_digest(root, cache) == first
    os.utime(root / "2.png", ns=(1, 1))
    assert folder_digest(root, cache) == first  # touched, same content
    (root / "2.png").write_bytes(b"TWO")
    changed = folder_digest(root, cache)
    assert changed != first
    # replaced by another of the same size, its modification time put back: the cache does not trust it
    stamp = (root / "2.png").stat()
    time.sleep(0.05)  # past the file system clock's tick (a few ms), so the status-change time moves
    (root / "2.png").write_bytes(b"tWo")
    os.utime(root / "2.png", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    replaced = folder_digest(root, cache)
    assert replaced not in (first, changed)
    (root / "2.png").rename(root / "3.png")
    assert folder_digest(root, cache) not in (first, changed, replaced)  # a path is part of the digest
    assert folder_digest(tmp_path / "nowhere", cache) == "missing"


def test_a_file_digest_follows_content_not_times(tmp_path):
    path, cache = tmp_path / "weights.pt", tmp_path / "cache"
    path.write_bytes(b"one")
    first = file_digest(path, cache)
    os.utime(path, ns=(1, 1))
    assert file_digest(path, cache) == first
    path.write_bytes(b"two")
    os.utime(path, ns=(1, 1))  # an older date than before, as a clock that was ahead leaves behind
    assert file_digest(path, cache) not in (first, "missing")
    assert file_digest(tmp_path / "nowhere.pt", cache) == "missing"


def test_a_cut_off_digest_cache_is_rebuilt_not_fatal(tmp_path):
    root, cache = tmp_path / "images", tmp_path / "cache"
    root.mkdir()
    (root / "1.png").write_bytes(b"one")
    digest = folder_digest(root, cache)
    [cache_file] = cache.iterdir()
    whole = cache_file.read_text()
    cache_file.write_text(whole[: len(whole) // 2])  # what a write cut off by a full disk left
    assert folder_digest(root, cache) == digest
    assert cache_file.read_text() == whole and [p.name for p in cache.iterdir()] == [cache_file.name]
    cache_file.write_text(json.dumps({"1.png": 5}))  # readable, but not an entry this version wrote
    assert folder_digest(root, cache) == digest
    assert cache_file.read_text() == whole


def test_a_code_fingerprint_follows_the_command_s_code_and_library_versions(tmp_path, monkeypatch):
    import shutil

    from clipeval.planning import fingerprints

    package = shutil.copytree(REPO / "workflow/clipeval", tmp_path / "clipeval")
    before = code_fingerprint(CodeGraph(package), "summarize")
    assert code_fingerprint(CodeGraph(package), "summarize") == before
    assert code_fingerprint(CodeGraph(package), "prepare", "cifar") != code_fingerprint(
        CodeGraph(package), "prepare", "coco"
    )
    (package / "reporting/summary.py").write_text((package / "reporting/summary.py").read_text() + "\n# edited\n")
    assert code_fingerprint(CodeGraph(package), "summarize") != before
    # An upgrade of a library the command names in LIBRARIES.
    knn_before = code_fingerprint(CodeGraph(package), "make-topk-predictions")
    monkeypatch.setattr(fingerprints, "installed_version", lambda name: "0" if name == "numpy" else "1")
    assert code_fingerprint(CodeGraph(package), "make-topk-predictions") != knn_before


def test_a_model_backend_s_code_reaches_the_fingerprints_of_its_models_jobs_alone(tmp_path):
    import shutil

    package = shutil.copytree(REPO / "workflow/clipeval", tmp_path / "clipeval")

    def extraction(*backends):
        return code_fingerprint(CodeGraph(package), "extract-features", model_backends=backends)

    backends = ("open_clip_models", "transformers_models", "cnclip_models")
    before = {backend: extraction(backend) for backend in backends}
    assert len(set(before.values())) == 3
    for edited in backends:
        path = package / f"models/{edited}.py"
        path.write_text(path.read_text() + "\n# edited\n")
        assert {backend for backend in backends if extraction(backend) != before[backend]} == {edited}
        before[edited] = extraction(edited)
    plan = plan_of(lambda c: c["models"].update(hf={"arch": "hf-transformers:m/hf", "pretrained": ""}))
    assert plan.model_backends(["b32", "hf"]) == ["open_clip_models", "transformers_models"]
    assert plan.model_backends(["b32"]) == ["open_clip_models"] and plan.model_backends(["given"]) == []


def test_the_default_config_plans_through_the_package(monkeypatch):
    monkeypatch.chdir(REPO)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config.setdefault("compare", {})
    config["metrics"].update(protocol="full", bootstrap=1000, bootstrap_seed=0)
    fill_metric_defaults(config)
    plan = Plan(config, ["config/config.yaml"])
    check_references(plan)
    check_knn_depth(plan)
    check_inputs(plan)
    assert plan.evaluation_pairs() == [("tiny-shapes", "shapes-test"), ("tiny-shapes", "shapes-classes")]
    assert plan.experiment_name() == "default"


def test_models_are_checked_once_per_definition_and_a_problem_stops_the_run(tmp_path):
    from clipeval.planning.model_checks import check_arguments, check_models

    def with_checkpoint(config):
        config["extract"]["device"] = "cpu"
        config["models"]["file"] = {"arch": "clipeval-tiny", "pretrained": "weights/epoch_3.pt"}
        config["models"]["next"] = {
            "arch": "clipeval-tiny",
            "pretrained": plan_of().artifact("checkpoint", model="tiny"),
        }

    plan = plan_of(with_checkpoint)
    assert check_arguments(plan, check_device=True) == [
        ["tiny", "clipeval-tiny", "", "fp32", "extract.precision", "cpu", "models.tiny.pretrained"],
        ["b32", "ViT-B-32", "openai", "bf16", "models.b32.precision", "cpu", "models.b32.pretrained"],
        ["file", "clipeval-tiny", "weights/epoch_3.pt", "fp32", "extract.precision", "cpu", "models.file.pretrained"],
        # trained by this run: not there yet
        ["next", "clipeval-tiny", "", "fp32", "extract.precision", "cpu", "models.next.pretrained"],
    ]
    content = {"weights/epoch_3.pt": "first"}
    asked = []

    def run_check(words):
        asked.append(words[1::8])  # the names after each --model
        return problems

    def check():
        check_models(plan, True, lambda kind, path: content[path], "code", run_check, passed=tmp_path / "passed")

    problems = ["models.file.pretrained: it does not fit", "models.b32.arch: another"]
    with pytest.raises(ConfigError, match="^models.file.pretrained: it does not fit$"):
        check()
    assert not (tmp_path / "passed").exists()  # a failed check records nothing
    problems = []
    check()
    check()  # all passed before: no check runs
    content["weights/epoch_3.pt"] = "second"  # new weights in the file: its model is checked again
    check()
    assert asked == [["tiny", "b32", "file", "next"]] * 2 + [["file"]]


def test_a_model_trained_to_be_evaluated_every_epoch_is_a_series_of_one_epoch_trainings():
    config = copy.deepcopy(CONFIG)
    config["models"]["tiny"]["train"].update(epochs=3, every_epoch=True)
    config["evaluate"] = [{"model": "tiny", "dataset": "flickr"}]
    expand_checkpoint_series(config)
    plan = Plan(config, ["config/mine.yaml"])
    members = ["tiny.epoch_1", "tiny.epoch_2", "tiny.epoch_3"]
    assert list(config["models"])[:3] == members
    assert plan.checkpoint_series() == {"tiny": [(1, "tiny.epoch_1"), (2, "tiny.epoch_2"), (3, "tiny.epoch_3")]}
    assert plan.evaluation_pairs() == [(member, "flickr") for member in members]
    assert config["models"]["tiny.epoch_2"]["train"] == {
        "dataset": "train", "epochs": 3, "batch_size": 8, "lr": 0.1, "seed": 0, "epoch": 2,
    }  # fmt: skip
    assert [plan.previous_epoch(member) for member in members] == [None, "tiny.epoch_1", "tiny.epoch_2"]
    assert plan.training_keys_by_epoch() == [plan.training_keys[member] for member in members]
    assert plan.training_keys_at_once() == []
    # Each epoch's checkpoint is its own, and none is the model trained at once.
    at_once = plan_of().training_keys["tiny"]
    assert len({*plan.training_keys_by_epoch(), at_once}) == 4


def test_a_trained_series_is_checked_under_its_own_entry_and_its_start_once():
    from clipeval.planning.model_checks import check_arguments

    def series(change):
        config = copy.deepcopy(CONFIG)
        config["datasets"] = {"train": config["datasets"]["train"]}
        config["models"] = {"tiny": config["models"]["tiny"]}
        config["models"]["tiny"]["train"].update(epochs=2, every_epoch=True, **{"from": "start/tiny.pt"})
        change(config["models"]["tiny"]["train"])
        expand_checkpoint_series(config)
        return Plan(config, ["config/mine.yaml"])

    with pytest.raises(ConfigError) as error:
        check_references(series(lambda train: train.update(precision="bf16")))
    assert str(error.value).startswith("models.tiny.train.precision: bf16 on the CPU is outside numerics: portable")
    with pytest.raises(ConfigError) as error:
        check_references(series(lambda train: train.update(dataset="nowhere")))
    assert str(error.value).startswith("models.tiny.train.dataset: unknown dataset 'nowhere'")
    with pytest.raises(ConfigError) as error:
        check_inputs(series(lambda train: None))
    assert str(error.value).startswith("models.tiny.train.from: file start/tiny.pt not found")
    checked = [words for words in check_arguments(series(lambda train: None), False) if words[0] == "tiny"]
    assert checked == [
        ["tiny", "clipeval-tiny", "start/tiny.pt", "fp32", "extract.precision", "-", "models.tiny.train.from"]
    ]


def test_an_epoch_named_as_another_series_member_is_refused():
    config = copy.deepcopy(CONFIG)
    config["models"] = {
        "a": {"arch": "clipeval-tiny", "checkpoints": "w/*.pt"},
        "a.b": {"arch": "clipeval-tiny", "train": {**CONFIG["models"]["tiny"]["train"], "every_epoch": True}},
    }
    with pytest.raises(ClipevalError) as error:
        expand_checkpoint_series(config, find=lambda pattern: ["w/b.epoch_1.pt"])
    assert str(error.value) == "models.a.b.train.every_epoch: its member 'a.b.epoch_1' has the name of another model"
