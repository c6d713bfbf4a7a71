"""SugarCrepe, Winoground and ARO's VG-Relation through the real Snakemake: features extracted once per model and dataset, the
scores equal to choices made directly from the feature files, the summary's rows and groups, comparisons,
and a scoring change that re-scores and extracts nothing."""

import csv
import json

import numpy as np
import pytest
import yaml
from snakemake_runner import copy_workflow, planned_jobs, recorded_folders, run_jobs
from sources import compositionality_entries, write_aro, write_sugarcrepe, write_winoground
from test_series_workflow import write_checkpoint

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(1)]

CONFIG = {
    "experiment": "compositional",
    "datasets": compositionality_entries(),
    "models": {
        "first": {"arch": "clipeval-tiny", "pretrained": "weights/first.pt"},
        "second": {"arch": "clipeval-tiny", "pretrained": "weights/second.pt"},
    },
    "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
    "metrics": {"bootstrap": 200},
    "suites": {"compositional": ["sugarcrepe", "winoground"]},
}


def features(path, key):
    rows = [json.loads(line) for line in open(path)]
    return {row[key]: np.array(row["feature"], dtype=np.float32).astype(np.float64) for row in rows}


def direct_outcomes(examples_path, images, texts):
    """Each example's (text right, image right or None, group right or None): argmax of float64 dot products
    over the example's own captions and images, the lower id first on a tie, as the ranking rule says."""

    def chosen(candidates, score):
        return min(candidates, key=lambda candidate: (-score(candidate), candidate))

    outcomes = []
    for line in open(examples_path):
        example = json.loads(line)
        image_ids, text_ids = example["image_ids"], example["text_ids"]
        text_right = all(
            chosen(text_ids, lambda t, i=i: float(images[i] @ texts[t])) == text_ids[j] for j, i in enumerate(image_ids)
        )
        if len(image_ids) == 1:
            outcomes.append((example["group"], text_right, None, None))
            continue
        image_right = all(
            chosen(image_ids, lambda i, t=text_ids[j]: float(images[i] @ texts[t])) == image_ids[j]
            for j in range(len(image_ids))
        )
        outcomes.append((example["group"], text_right, image_right, text_right and image_right))
    return outcomes


def test_compositionality_sets_are_scored_from_the_extracted_features_and_summarised(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    write_sugarcrepe(workdir / "sources/sugarcrepe")
    write_winoground(workdir / "sources/winoground")
    write_aro(workdir / "sources/aro")
    write_checkpoint(workdir / "weights/first.pt", 1)
    write_checkpoint(workdir / "weights/second.pt", 2)
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    jobs = run_jobs(workdir)
    assert jobs["score_compositionality"] == 6 and jobs["extract_text_features"] == 6 and "knn" not in jobs
    assert jobs["compare_models"] == 3 and jobs["compositionality_failures"] == 6

    folders = recorded_folders(workdir, "compositional")
    experiment = workdir / "results/experiments/compositional"
    for dataset in ("sugarcrepe", "winoground", "vg-relation"):
        examples_path = workdir / folders["datasets"][dataset] / "examples.jsonl"
        for model in ("first", "second"):
            extracted = workdir / folders["features"][f"{model} on {dataset}"]
            outcomes = direct_outcomes(
                examples_path,
                features(extracted / "images.jsonl", "image_id"),
                features(extracted / "texts.jsonl", "text_id"),
            )
            scores = json.loads((experiment / f"scores/{model}/{dataset}/compositionality.json").read_text())
            assert scores["text_score"] == 100 * np.mean([text for _, text, _, _ in outcomes])
            for group in {group for group, *_ in outcomes}:
                mine = [outcome for outcome in outcomes if outcome[0] == group]
                assert scores["groups"][group]["text_score"] == 100 * np.mean([text for _, text, _, _ in mine])
                if dataset == "winoground":
                    assert scores["groups"][group]["group_score"] == 100 * np.mean([g for *_, g in mine])
            if dataset == "winoground":
                assert scores["image_score"] == 100 * np.mean([image for _, _, image, _ in outcomes])
            else:
                assert "image_score" not in scores and "group_score" not in scores
            if dataset == "vg-relation":  # ARO's macro accuracy: the mean over relations but the symmetric "next to"
                kept = [scores["groups"][group]["text_score"] for group in ("on", "holding")]
                assert scores["macro_text_score"] == np.mean(kept)
            else:
                assert "macro_text_score" not in scores
            low, high = scores["intervals"]["text_score"]
            assert low <= scores["text_score"] <= high

    with open(experiment / "summary.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["model"], row["dataset"], row["task"]) for row in rows] == [
        (model, dataset, "compositionality")
        for model in ("first", "second")
        for dataset in ("sugarcrepe", "winoground", "vg-relation")
    ]
    assert [row["macro_text_score"] != "" for row in rows] == [False, False, True] * 2
    summary = (experiment / "summary.md").read_text()
    assert "### Compositionality by group" in summary and "| first | sugarcrepe | swap_att |" in summary
    with open(experiment / "averages.csv") as handle:
        assert {(row["model"], row["metric"], row["datasets"]) for row in csv.DictReader(handle)} == {
            ("first", "text_score", "3"),
            ("second", "text_score", "3"),
        }
    assert "Compositionality by group" in (experiment / "report/results.html").read_text()
    suite = json.loads((experiment / "suites/compositional.json").read_text())
    for model in ("first", "second"):
        texts = [
            json.loads((experiment / f"scores/{model}/{dataset}/compositionality.json").read_text())["text_score"]
            for dataset in ("sugarcrepe", "winoground")
        ]
        assert suite["averages"][model] == np.mean(texts)
    assert "## Suites" in summary and "Suite compositional" in (experiment / "report/results.html").read_text()
    with open(experiment / "report/suites/compositional.csv") as handle:
        points = list(csv.DictReader(handle))
    assert [(p["model"], p["dataset"]) for p in points] == [
        (model, dataset) for model in ("first", "second") for dataset in (*CONFIG["suites"]["compositional"], "average")
    ]
    assert float(points[-1]["value"]) == round(suite["averages"]["second"], 6)
    for dataset in ("sugarcrepe", "winoground", "vg-relation"):
        record = json.loads((experiment / f"scores/first/{dataset}/compositionality-ranks.json").read_text())
        wrong = [example for example, outcome in zip(record["example_ids"], record["outcomes"]) if 0 in outcome[:2]]
        with open(experiment / f"report/{dataset}/first/failures.csv") as handle:
            shown = [int(row["example_id"]) for row in csv.DictReader(handle)]
        assert set(shown) <= set(wrong) and len(shown) == min(len(wrong), 8)

    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    config["metrics"]["bootstrap"] = 100
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert planned_jobs(workdir) == {
        "score_compositionality": 6,
        "compare_models": 3,
        "plot_comparisons": 3,
        "compositionality_failures": 6,
        "score_suite": 1,
        "plot_suite": 1,
        "summary": 1,
        "report_tables": 1,
        "all": 1,
    }
