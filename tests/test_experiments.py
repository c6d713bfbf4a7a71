"""Experiment records: which shared results a second experiment may use, and the listing."""

import re

import pytest
from conftest import run_cli

from clipeval.errors import ClipevalError
from clipeval.experiments import differences, experiment_conflict, listing
from clipeval.storage.jsonl import write_json

METRICS = {"bootstrap": 1000, "bootstrap_seed": 0, "recall_at": [1, 5, 10], "protocol": "full"}


def record(name, config_file=None, **changes):
    base = {
        "experiment": name,
        "config_files": [config_file or f"config/{name}.yaml"],
        "datasets": {
            "flickr": {"format": "karpathy", "task": "retrieval", "annotations": "a.json", "images": "img"},
            "cifar": {"format": "cifar", "task": "classification", "batches": "cifar"},
        },
        "models": {"vit": {"arch": "ViT-B-32", "pretrained": "openai", "precision": "fp32", "numerics": "portable"}},
        "scores": {
            "vit on flickr": {"metrics": METRICS, "knn": {"top_k": 10}},
            "vit on cifar": {"metrics": {"bootstrap": 1000, "bootstrap_seed": 0}},
        },
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        entry = base
        for key in parents:
            entry = entry[key]
        entry[last] = value
    return base


def claim(results, experiment):
    write_json(results / "experiments" / experiment["experiment"] / "experiment.json", experiment)


def test_identical_definitions_are_shared(tmp_path):
    claim(tmp_path, record("first"))
    assert experiment_conflict(record("second"), tmp_path) is None


def test_new_names_beside_shared_ones_are_no_conflict(tmp_path):
    claim(tmp_path, record("first"))
    second = record("second")
    second["models"]["siglip"] = {"arch": "ViT-B-16-SigLIP", "pretrained": "webli"}
    second["scores"]["siglip on flickr"] = {"metrics": {**METRICS, "bootstrap": 0}, "knn": {"top_k": 50}}
    assert experiment_conflict(second, tmp_path) is None


def test_a_model_defined_otherwise_is_named_with_its_differences(tmp_path):
    claim(tmp_path, record("first"))
    second = record("second", models__vit__pretrained="laion2b_s34b_b79k")
    second["models"]["vit"]["precision"] = "fp16"
    assert experiment_conflict(second, tmp_path) == (
        f"models.vit: experiment 'first' ({tmp_path}/experiments/first/experiment.json) defines it otherwise"
        " (precision: 'fp16' here, 'fp32' there; pretrained: 'laion2b_s34b_b79k' here, 'openai' there);"
        f" both would write its results: rename it in this config, or delete {tmp_path}/experiments/first"
        " if that experiment is done with"
    )


def test_a_dataset_defined_otherwise_comes_first(tmp_path):
    claim(tmp_path, record("first"))
    second = record("second", models__vit__pretrained="laion2b_s34b_b79k")
    del second["datasets"]["flickr"]["images"]
    second["datasets"]["flickr"]["protocol"] = "folds-1k"
    assert experiment_conflict(second, tmp_path).startswith(
        f"datasets.flickr: experiment 'first' ({tmp_path}/experiments/first/experiment.json) defines it otherwise"
        " (images: 'unset' here, 'img' there; protocol: 'folds-1k' here, 'unset' there);"
    )


def test_a_shared_pair_scored_otherwise_names_the_setting(tmp_path):
    claim(tmp_path, record("first"))
    second = record("second")
    second["scores"]["vit on flickr"] = {"metrics": {**METRICS, "bootstrap": 0}, "knn": {"top_k": 10}}
    assert experiment_conflict(second, tmp_path) == (
        f"metrics.bootstrap: experiment 'first' ({tmp_path}/experiments/first/experiment.json) scores vit on flickr"
        " with other settings (metrics.bootstrap: 0 here, 1000 there); both would write its scores:"
        " give the model another name in one of them"
    )


def test_many_differences_are_counted_not_all_listed():
    ours = {"a": 1, "b": 2, "c": {"d": 3, "e": 4}}
    theirs = {"a": 0, "b": 0, "c": {"d": 0, "e": 0}}
    assert differences(ours, theirs) == [("a", 1, 0), ("b", 2, 0), ("c.d", 3, 0), ("c.e", 4, 0)]
    from clipeval.experiments import describe_differences

    assert (
        describe_differences(differences(ours, theirs))
        == "a: 1 here, 0 there; b: 2 here, 0 there; c.d: 3 here, 0 there; and 1 more"
    )


def test_an_experiment_may_change_its_own_definitions(tmp_path):
    claim(tmp_path, record("first"))
    assert experiment_conflict(record("first", models__vit__pretrained="laion2b_s34b_b79k"), tmp_path) is None


def test_one_name_for_two_config_files_is_refused(tmp_path):
    claim(tmp_path, record("first"))
    assert experiment_conflict(record("first", config_file="copy-of-first.yaml"), tmp_path) == (
        f"experiment: 'first' is the experiment of config/first.yaml ({tmp_path}/experiments/first/experiment.json):"
        f" give this config another name (experiment: NAME), or delete {tmp_path}/experiments/first"
    )


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{not json", "malformed JSON"),
        (b'{"experiment": "first"}', "not an experiment record (no config_files, datasets, models, scores)"),
        (
            b'{"experiment": "first", "config_files": [], "datasets": [], "models": {}, "scores": 1}',
            "not an experiment record (datasets, scores of the wrong type)",
        ),
        (
            b'{"experiment": "first", "config_files": [], "datasets": {}, "models": {}, "scores": {"vit on gone": {}}}',
            "scores 'vit on gone', but its datasets do not define 'gone' as evaluated",
        ),
    ],
)
def test_a_damaged_record_is_named(tmp_path, content, message):
    path = tmp_path / "experiments/first/experiment.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(ClipevalError, match=f"^{re.escape(f'{path}: {message}')}"):
        experiment_conflict(record("second"), tmp_path)


def test_a_record_moved_to_another_name_is_refused(tmp_path):
    claim(tmp_path, {**record("first"), "experiment": "renamed"})
    (tmp_path / "experiments/renamed").rename(tmp_path / "experiments/first")
    with pytest.raises(ClipevalError, match="experiment.json: records experiment 'renamed', not 'first'$"):
        experiment_conflict(record("second"), tmp_path)


def test_listing_shows_each_pair_by_name_with_its_headline_or_not_run(tmp_path):
    claim(tmp_path, record("first"))
    claim(tmp_path, record("second"))
    (tmp_path / "experiments/first/summary.csv").write_text(
        "model,dataset,task,mean_recall,top1\nvit,flickr,retrieval,61.23456,\nvit,cifar,classification,,88.5\n"
    )
    summary = f"{tmp_path}/experiments/first/summary.csv"
    assert [tuple(row.values()) for row in listing(tmp_path)] == [
        ("first", "vit", "cifar", "classification", "top1", "88.50", summary),
        ("first", "vit", "flickr", "retrieval", "mean_recall", "61.23", summary),
        ("second", "vit", "cifar", "classification", "top1", "not run", ""),
        ("second", "vit", "flickr", "retrieval", "mean_recall", "not run", ""),
    ]


def test_list_experiments_prints_a_table(tmp_path):
    assert run_cli("list-experiments", "--results", tmp_path).stdout == (
        f"no experiments in {tmp_path} (each run records one under {tmp_path}/experiments/)\n"
    )
    claim(tmp_path, record("first"))
    result = run_cli("list-experiments", "--results", tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "experiment  model  dataset  task            metric       value    summary",
        "first       vit    cifar    classification  top1         not run",
        "first       vit    flickr   retrieval       mean_recall  not run",
    ]


def test_list_experiments_names_a_damaged_summary(tmp_path):
    claim(tmp_path, record("first"))
    (tmp_path / "experiments/first/summary.csv").write_text("a,b\n1,2\n")
    result = run_cli("list-experiments", "--results", tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"clipeval: error: {tmp_path}/experiments/first/summary.csv: not a clipeval summary"
        " (no model and dataset columns)\n"
    )
