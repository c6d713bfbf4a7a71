"""Experiment records: which experiment folder a config writes, and the listing."""

import re

import pytest
from conftest import run_cli

from clipeval.errors import ClipevalError
from clipeval.experiments import differences, experiment_folder, listing
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


def test_a_config_writes_its_experiment_s_name_while_no_other_config_s_run_holds_it(tmp_path):
    assert experiment_folder("first", ["config/first.yaml"], tmp_path) == "first"
    claim(tmp_path, record("first"))
    assert experiment_folder("first", ["config/first.yaml"], tmp_path) == "first"


def test_a_copied_config_is_a_new_experiment_unless_it_replaces_the_old(tmp_path):
    claim(tmp_path, record("first"))
    copy = ["config/copy-of-first.yaml"]
    assert experiment_folder("first", copy, tmp_path) == "first-2"
    assert experiment_folder("first", copy, tmp_path, replace=True) == "first"
    claim(tmp_path, record("first-2", config_file="config/another-copy.yaml"))
    assert experiment_folder("first", copy, tmp_path) == "first-3"
    claim(tmp_path, record("first-3", config_file=copy[0]))
    assert experiment_folder("first", copy, tmp_path) == "first-3"  # its own, from its earlier run


def test_many_differences_are_listed_by_dotted_key():
    ours = {"a": 1, "b": 2, "c": {"d": 3, "e": 4}}
    theirs = {"a": 0, "b": 0, "c": {"d": 0}}
    assert differences(ours, theirs) == [("a", 1, 0), ("b", 2, 0), ("c.d", 3, 0), ("c.e", 4, "unset")]


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
            b'{"experiment": "first", "config_files": [], "datasets": {}, "models": {}, "scores": {},'
            b' "folders": {"datasets": {"flickr": 3}}}',
            "not an experiment record (folders is not a mapping of names to folders)",
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
        experiment_folder("first", ["config/second.yaml"], tmp_path)


def test_a_record_moved_to_another_name_is_refused(tmp_path):
    claim(tmp_path, {**record("first"), "experiment": "renamed"})
    (tmp_path / "experiments/renamed").rename(tmp_path / "experiments/first")
    with pytest.raises(ClipevalError, match="experiment.json: records experiment 'renamed', not 'first'$"):
        experiment_folder("first", ["config/second.yaml"], tmp_path)


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


def test_make_report_writes_the_report_where_the_run_wrote_its_experiment(tmp_path):
    """`make report` named the folder from the config alone and overwrote another experiment's report.html;
    it asks `clipeval experiment-folder`, which resolves NAME-2 as the run does."""
    from conftest import REPO

    (tmp_path / "config").mkdir()
    for name in ("first", "copy"):
        (tmp_path / "config" / f"{name}.yaml").write_text("experiment: first\n")
    claim(tmp_path / "results", record("first"))
    asked = {name: run_cli("experiment-folder", f"config/{name}.yaml", cwd=tmp_path) for name in ("first", "copy")}
    assert [(result.returncode, result.stdout) for result in asked.values()] == [(0, "first\n"), (0, "first-2\n")]
    (tmp_path / "config/copy.yaml").write_text("experiment: first\nreplace: true\n")
    assert run_cli("experiment-folder", "config/copy.yaml", cwd=tmp_path).stdout == "first\n"
    missing = run_cli("experiment-folder", "config/none.yaml", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (
        1,
        "clipeval: error: config/none.yaml: cannot read the config (FileNotFoundError)\n",
    )
    recipe = (REPO / "Makefile").read_text().split("\nreport: run\n")[1].split("\n\n")[0]
    assert "name=$$($(BIN)/python -m clipeval experiment-folder $(CONFIG))" in recipe
    assert "--report results/experiments/$$name/report.html" in recipe
