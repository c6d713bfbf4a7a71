"""The whole workflow through the real Snakemake, in a temporary copy of the repository: the default experiment's
run, and what runs after it. tests/test_workflow_checks.py has the checks that need no finished run."""

import json
import re
from pathlib import Path

import pytest
from conftest import REPO
from snakemake_runner import (
    JOB_CORES,
    planned_jobs,
    read_csv,
    read_summary,
    recorded_folders,
    snakemake,
)

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(13)]


def recorded_predictions(workdir, pair, direction="t2i", top_k=10, experiment="default"):
    features = recorded_folders(workdir, experiment)["features"][pair]
    return f"{features.replace('features', 'predictions', 1)}/top-{top_k}/{direction}.jsonl"


@pytest.fixture(scope="module")
def default_run(default_experiment):
    """The default experiment's finished directory (tests/conftest.py), as `make run` leaves it."""
    return default_experiment.workdir


def test_default_workflow_recall_is_far_above_chance(default_run):
    rows = read_summary(default_run)
    assert [(r["model"], r["dataset"], r["task"]) for r in rows] == [
        ("tiny-shapes", "shapes-test", "retrieval"),
        ("tiny-shapes", "shapes-classes", "classification"),
    ]
    row = rows[0]
    assert (int(row["images"]), int(row["texts"])) == (1000, 5000)
    recall = {name: float(row[name]) for name in row if "_R@" in name and not name.endswith(("_ci_low", "_ci_high"))}
    assert all(0 <= value <= 100 for value in recall.values())
    assert recall["t2i_R@1"] <= recall["t2i_R@5"] <= recall["t2i_R@10"]
    assert recall["i2t_R@1"] <= recall["i2t_R@5"] <= recall["i2t_R@10"]
    chance_t2i_r10 = 100 * 10 / 1000  # one positive image among 1000
    chance_i2t_r10 = 100 * (1 - (1 - 5 / 5000) ** 10)  # five positive captions among 5000
    assert recall["t2i_R@10"] >= 10 * chance_t2i_r10
    assert recall["i2t_R@10"] >= 10 * chance_i2t_r10
    assert float(row["rsum"]) == pytest.approx(sum(recall.values()), abs=0.01)
    assert float(row["rsum_ci_low"]) <= float(row["rsum"]) <= float(row["rsum_ci_high"])


def test_default_workflow_classifies_shapes_far_above_chance(default_run):
    row = read_summary(default_run)[1]
    assert (int(row["images"]), int(row["classes"])) == (600, 6)
    chance = 100 / 6  # ± 1.5 points over 600 images
    assert float(row["top1"]) >= 1.5 * chance
    assert float(row["top1"]) <= float(row["top5"]) <= 100
    scores = default_run / "results/experiments/default/scores/tiny-shapes/shapes-classes/classification.json"
    assert sum(map(sum, json.loads(scores.read_text())["confusion_matrix"])) == 600


def test_default_workflow_writes_the_documented_paths(default_run):
    folders = recorded_folders(default_run)
    test, classes, train = (folders["datasets"][name] for name in ("shapes-test", "shapes-classes", "shapes-train"))
    model, checkpoint = folders["models"]["tiny-shapes"], folders["checkpoints"]["tiny-shapes"]
    # Shared artifacts under the keys of their definitions (docs/ARCHITECTURE.md), scores under the experiment.
    key = r"[0-9a-f]{12}"
    assert re.fullmatch(f"results/datasets/{key}", test) and re.fullmatch(f"results/models/{key}", model)
    assert re.fullmatch(f"results/checkpoints/{key}/checkpoint.pt", checkpoint)
    model_key, test_key, classes_key, train_key = (Path(folder).name for folder in (model, test, classes, train))
    on_test, on_classes = (f"results/features/{model_key}/{key}" for key in (test_key, classes_key))
    assert folders["features"] == {"tiny-shapes on shapes-test": on_test, "tiny-shapes on shapes-classes": on_classes}
    predictions = on_test.replace("features", "predictions") + "/top-10"
    scores = "results/experiments/default/scores/tiny-shapes"
    expected = [
        f"{test}/images.lmdb/data.mdb",
        f"{test}/texts.jsonl",
        f"{train}/texts.jsonl",
        checkpoint,
        f"{on_test}/images.jsonl",
        f"{on_test}/texts.jsonl",
        f"{predictions}/t2i.jsonl",
        f"{predictions}/i2t.jsonl",
        f"{scores}/shapes-test/retrieval.json",
        f"{scores}/shapes-test/retrieval-ranks.json",
        f"{classes}/labels.jsonl",
        f"{classes}/classes.json",
        f"{on_classes}/classes.jsonl",
        f"{scores}/shapes-classes/classification.json",
        f"{scores}/shapes-classes/classification-ranks.json",
        "results/experiments/default/experiment.json",
        "results/experiments/default/summary.md",
        "results/experiments/default/averages.csv",
        "results/experiments/default/comparisons.csv",
        f"logs/prepare/{test_key}.log",
        f"logs/train/{Path(checkpoint).parent.name}.log",
        f"logs/extract/{model_key}/{test_key}/texts.log",
        f"logs/extract/{model_key}/{test_key}/images-by-0-0.log",
        f"{model}/meta.json",
        f"logs/extract/{model_key}/meta.log",
        f"logs/knn/{model_key}/{test_key}/top-10/t2i.log",
        "logs/score/default/tiny-shapes/shapes-test/retrieval.log",
        f"logs/classify/{model_key}/{classes_key}/classes.log",
        "logs/score/default/tiny-shapes/shapes-classes/classification.log",
        "logs/summary/default.log",
        "results/experiments/default/report/results.html",
        "results/experiments/default/report/provenance.html",
        "results/experiments/default/report/shapes-test/recall-curves.png",
        "results/experiments/default/report/shapes-test/tiny-shapes/failures-t2i.png",
        "results/experiments/default/report/shapes-classes/class-recall.png",
        "results/experiments/default/report/shapes-classes/tiny-shapes/confusion.png",
        "logs/report/default/tables.log",
        "logs/report/default/shapes-test/tiny-shapes/failures.log",
    ]
    assert [p for p in expected if not (default_run / p).exists()] == []
    assert not (default_run / f"results/features/{model_key}/{train_key}").exists()
    metrics = json.loads((default_run / f"{scores}/shapes-test/retrieval.json").read_text())
    assert set(metrics) == {
        "task",
        "protocol",
        "recall_at",
        "ranking_at",
        "t2i",
        "i2t",
        "rsum",
        "mean_recall",
        "intervals",
        "bootstrap",
        "counts",
        "provenance",
    }
    assert metrics["task"] == "retrieval" and metrics["protocol"] == "full"
    assert (metrics["recall_at"], metrics["ranking_at"]) == ([1, 5, 10], [10])
    assert metrics["bootstrap"]["replicates"] == 1000 and metrics["counts"]["predictions_per_query"] == 10
    low, high = metrics["intervals"]["t2i"]["median_rank"]
    assert low <= metrics["t2i"]["median_rank"] <= high
    assert metrics["provenance"]["config"]["model"]["train"]["dataset"] == "shapes-train"


def test_the_readme_shows_what_a_fresh_run_prints(default_run):
    """The README's headline numbers are the default experiment's, to the last digit, on this machine too."""
    from clipeval.reporting.summary import headline_block

    readme = headline_block((REPO / "README.md").read_text(), "README.md")
    fresh = headline_block((default_run / "results/experiments/default/summary.md").read_text(), "summary.md")
    assert readme == fresh, "README.md's numbers differ from a fresh run: run `make readme` and commit"


def test_the_report_figures_show_the_metrics_files_numbers(default_run):
    """Each figure's numbers (the CSV or JSON beside it) against the score stage's files."""
    report = default_run / "results/experiments/default/report"
    scores = default_run / "results/experiments/default/scores/tiny-shapes"
    retrieval = json.loads((scores / "shapes-test/retrieval.json").read_text())
    ranks = json.loads((scores / "shapes-test/retrieval-ranks.json").read_text())
    curves = read_csv(report / "shapes-test/recall-curves.csv")
    for direction in ("t2i", "i2t"):
        curve = {int(r["k"]): float(r["recall"]) for r in curves if r["direction"] == direction}
        assert sorted(curve) == list(range(1, 101))
        for k in (1, 5, 10):
            assert curve[k] == pytest.approx(retrieval[direction][f"R@{k}"], abs=1e-6)
        assert curve[100] == pytest.approx(
            100 * sum(r <= 100 for r in ranks[direction]["ranks"]) / len(ranks[direction]["ranks"]), abs=1e-6
        )
        bins = [r for r in read_csv(report / "shapes-test/rank-distribution.csv") if r["direction"] == direction]
        assert sum(int(b["queries"]) for b in bins) == len(ranks[direction]["ranks"])
        assert (bins[0]["rank_from"], bins[0]["rank_to"]) == ("1", "1")
        assert float(bins[0]["percent"]) == pytest.approx(retrieval[direction]["R@1"], abs=1e-6)

    # The worst queries are those of the highest ranks; what they retrieve is the knn stage's top-k list.
    t2i = json.loads((report / "shapes-test/tiny-shapes/failures-t2i.json").read_text())
    assert len(t2i) == 8
    assert [f["rank"] for f in t2i] == sorted(ranks["t2i"]["ranks"], reverse=True)[:8]
    predictions = {
        row["text_id"]: row
        for row in map(json.loads, open(default_run / recorded_predictions(default_run, "tiny-shapes on shapes-test")))
    }
    for failure in t2i:
        listed = predictions[failure["query_id"]]
        assert failure["retrieved"] == listed["image_ids"][:5]
        assert failure["scores"] == pytest.approx(listed["scores"][:5], abs=1e-6)
        assert not set(failure["positives"]) & set(failure["retrieved"])  # its rank is past the top 5

    classification = json.loads((scores / "shapes-classes/classification.json").read_text())
    recall = {r["class"]: float(r["recall"]) for r in read_csv(report / "shapes-classes/class-recall.csv")}
    assert recall == pytest.approx({name: entry["recall"] for name, entry in classification["per_class"].items()})
    # The matrix is in class index order (classes.json), as in classification.json.
    classes = default_run / recorded_folders(default_run)["datasets"]["shapes-classes"] / "classes.json"
    classnames = json.loads(classes.read_text())["classnames"]
    confusion = read_csv(report / "shapes-classes/tiny-shapes/confusion.csv")
    assert [row["true \\ predicted"] for row in confusion] == classnames
    assert [[int(row[name]) for name in classnames] for row in confusion] == classification["confusion_matrix"]


def test_a_finished_run_has_nothing_to_do(default_run):
    assert planned_jobs(default_run) == {}
    result = snakemake(default_run, "--cores", JOB_CORES)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr
