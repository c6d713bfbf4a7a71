"""Published numbers: the shipped tables read as their sources define them, and a run's numbers beside them in the
summary, the report and the leaderboard (fake reference rows for the tiny model)."""

import csv
import json

import pytest
import yaml
from conftest import REPO

import clipeval.published.check as check
from clipeval.cli import main
from clipeval.published.benchmarks import BENCHMARKS, MEAN_R1
from clipeval.published.check import TOLERANCE, published_rows, tolerance_note
from clipeval.published.tables import DATA, OPENCLIP_RESULTS, OPENCLIP_RETRIEVAL, PublishedValue, index, read_values
from clipeval.reporting.summary import summarize
from clipeval.reporting.tables import results_page


def test_the_shipped_tables_hold_what_open_clip_and_clip_benchmark_publish():
    """Values read off the files by hand: ViT-B-32 openai's row of each table."""
    shipped = index(read_values())
    imagenet = {(v.source, v.metric): v.value for v in shipped["ViT-B-32", "openai", "imagenet1k"]}
    assert imagenet == pytest.approx(
        {
            ("openclip_results.csv", "top1"): 63.32,
            ("clip_benchmark.csv", "top1"): 63.334,
            ("clip_benchmark.csv", "top5"): 88.778,
            ("clip_benchmark.csv", "mean_per_class_recall"): 63.284,
        }
    )
    flickr = {(v.source, v.metric): v.value for v in shipped["ViT-B-32", "openai", "flickr30k"]}
    assert flickr[OPENCLIP_RESULTS, MEAN_R1] == pytest.approx(68.84)
    assert flickr[OPENCLIP_RETRIEVAL, "t2i_R@1"] == pytest.approx(58.78)
    assert flickr[OPENCLIP_RETRIEVAL, "i2t_R@10"] == pytest.approx(98.2)
    assert flickr["clip_benchmark.csv", "t2i_R@5"] == pytest.approx(83.38000178337097)


def test_open_clip_s_retrieval_average_is_the_mean_of_its_two_r_at_1():
    """An independent check of how the tables are read: open_clip's main table gives Flickr and MSCOCO as
    DataComp's mean R@1, and its retrieval table "image retr." (text → image) and "text retr." R@1 of the same
    models. If either reading were wrong (a direction swapped, another metric), the two tables would disagree."""
    with open(DATA / OPENCLIP_RETRIEVAL, newline="") as handle:
        retrieval = {(row["name"], row["pretrained"]): row for row in csv.DictReader(handle)}
    with open(DATA / OPENCLIP_RESULTS, newline="") as handle:
        main_rows = list(csv.DictReader(handle))
    compared = 0
    for row in main_rows:
        other = retrieval.get((row["name"], row["pretrained"]))
        for prefix in ("Flickr", "MSCOCO"):
            if other and row[prefix]:
                mean = (float(other[f"{prefix} image retr. R@1"]) + float(other[f"{prefix} text retr. R@1"])) / 2
                assert float(row[prefix]) == pytest.approx(mean, abs=1e-4), (row["name"], row["pretrained"], prefix)
                compared += 1
    assert compared > 200


def test_every_benchmark_is_in_the_schema_and_in_a_table():
    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    assert schema["$defs"]["published"]["enum"] == sorted(BENCHMARKS)
    found = {value.benchmark for value in read_values()}
    assert found == set(BENCHMARKS)


def score(arch="clipeval-tiny", pretrained="tiny-tag", published="flickr30k", t2i_r1=40.0, i2t_r1=50.0):
    """A retrieval score file of R@1/5/10 as the score stage writes it, its config in its provenance."""
    dataset = {"format": "shapes", "task": "retrieval", **({"published": published} if published else {})}
    return {
        "task": "retrieval",
        "recall_at": [1, 5, 10],
        "t2i": {"R@1": t2i_r1, "R@5": 70.0, "R@10": 80.0},
        "i2t": {"R@1": i2t_r1, "R@5": 75.0, "R@10": 85.0},
        "provenance": {
            "config": {"dataset": dataset, "model": {"name": "tiny", "arch": arch, "pretrained": pretrained}}
        },
    }


# Fake reference rows for the tiny model: one within the tolerance, one beyond it, one the run did not compute
# (R@50), and one of another model.
FAKE = index(
    [
        PublishedValue("clipeval-tiny", "tiny-tag", "flickr30k", "t2i_R@1", 40.0 - TOLERANCE + 0.25, "table.csv"),
        PublishedValue("clipeval-tiny", "tiny-tag", "flickr30k", MEAN_R1, 46.5, "table.csv"),
        PublishedValue("clipeval-tiny", "tiny-tag", "flickr30k", "t2i_R@50", 99.0, "table.csv"),
        PublishedValue("clipeval-tiny", "other-tag", "flickr30k", "t2i_R@1", 10.0, "table.csv"),
    ]
)


@pytest.fixture
def fake_tables(monkeypatch):
    monkeypatch.setitem(check.SOURCE_NAMES, "table.csv", "a table")
    monkeypatch.setattr(check, "shipped_index", lambda: FAKE)


def test_each_published_value_of_the_model_gets_the_measured_one_and_a_mark_beyond_the_tolerance(fake_tables):
    rows = published_rows("tiny", "shapes-test", score())
    assert [(r["metric"], r["measured"], r["published"], r["beyond"]) for r in rows] == [
        ("t2i_R@1", 40.0, pytest.approx(39.25), False),  # 0.75 points off
        ("mean R@1 of both directions", 45.0, 46.5, True),  # (40 + 50) / 2, 1.5 points off
    ]
    assert rows[1] == {
        "model": "tiny",
        "dataset": "shapes-test",
        "benchmark": "flickr30k",
        "source": "a table",
        "metric": "mean R@1 of both directions",
        "measured": 45.0,
        "published": 46.5,
        "difference": -1.5,
        "beyond": True,
    }


@pytest.mark.parametrize(
    "scored",
    [score(published=None), score(pretrained="results/checkpoints/tiny.pt"), score(arch="clipeval-small")],
    ids=["no benchmark named", "a checkpoint, not a tag", "another arch"],
)
def test_no_rows_without_a_named_benchmark_or_a_model_the_tables_know(fake_tables, scored):
    assert published_rows("tiny", "shapes-test", scored) == []


def test_the_summary_the_report_and_the_leaderboard_show_them(fake_tables, tmp_path, capsys):
    scores = tmp_path / "results/experiments/default/scores/tiny/shapes-test"
    scores.mkdir(parents=True)
    scored = {**score(), "protocol": "full", "ranking_at": [], "rsum": 0.0, "mean_recall": 0.0}
    scored["counts"] = {"images": 10, "texts": 50}
    for direction in ("t2i", "i2t"):
        scored[direction].update(mean_recall=50.0, mean_rank=3.0, median_rank=2.0)
    (scores / "retrieval.json").write_text(json.dumps(scored))
    expected = [
        "| model | dataset | benchmark | source | metric | measured | published | difference |",
        "|---|---|---|---|---|---|---|---|",
        "| tiny | shapes-test | flickr30k | a table | t2i_R@1 | 40.00 | 39.25 | +0.75 |",
        "| tiny | shapes-test | flickr30k | a table | mean R@1 of both directions | 45.00 | 46.50 | -1.50 ⚠ |",
        "",
        tolerance_note(),
    ]
    outputs = {name: tmp_path / f"{name}.out" for name in ("csv", "markdown", "averages", "comparisons", "series")}
    summarize([("tiny", "shapes-test", scores / "retrieval.json")], [], outputs)
    markdown = outputs["markdown"].read_text().splitlines()
    start = markdown.index("## Published numbers")
    assert markdown[start + 5 : start + 5 + len(expected)] == expected
    assert "more than 1.0 points from the published one" in tolerance_note()

    page = results_page("default", [("tiny", "shapes-test", scores / "retrieval.json")])
    assert "Published numbers beside the measured ones" in page and "-1.50 ⚠" in page

    assert main(["leaderboard", "--results", str(tmp_path / "results"), "--html", str(tmp_path / "board.html")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-len(expected) :] == expected
    board = (tmp_path / "board.html").read_text()
    assert "<td>mean R@1 of both directions</td><td>45.00</td><td>46.50</td><td>-1.50 ⚠</td>" in board


def test_dollar_street_and_geode_are_compared_by_their_worst_groups():
    """open_clip's table holds DataComp's main metrics for them: the worst income group's top-5 (Dollar Street),
    the worst region's top-1 (GeoDE); ViT-B-32 openai's values read off the file by hand."""
    shipped = index(read_values())
    street = {v.metric: v.value for v in shipped["ViT-B-32", "openai", "fairness/dollar_street"]}
    geode = {v.metric: v.value for v in shipped["ViT-B-32", "openai", "fairness/geode"]}
    assert street == pytest.approx({"worst_group/income_ds/top5": 53.86})
    assert geode == pytest.approx({"worst_group/region/top1": 82.17})
    score = {"top1": 70.0, "worst_group": {"income_ds": {"top1": 30.0, "top5": 54.5, "top5_group": "0"}}}
    assert check.measured_value(score, "worst_group/income_ds/top5") == 54.5
    assert check.measured_value(score, "worst_group/region/top1") is None


def test_iwildcam_and_fmow_are_compared_by_macro_f1_and_the_worst_region():
    """DataComp's main metrics for them (tasklist.yml: F1-macro_all, acc_worst_region), as open_clip's table
    holds them; ViT-B-32 openai's values read off the file by hand."""
    shipped = index(read_values())
    wildcam = {v.metric: v.value for v in shipped["ViT-B-32", "openai", "wilds/iwildcam"]}
    fmow = {v.metric: v.value for v in shipped["ViT-B-32", "openai", "wilds/fmow"]}
    assert wildcam == pytest.approx({"macro_f1": 7.32})
    assert fmow == pytest.approx({"worst_group/region/top1": 16.76})


def test_the_openclip_38_suite_averages_to_open_clip_s_own_38_dataset_average_for_every_model():
    """config/examples/openclip-38.yaml's datasets, each by the metric its benchmark is published with: the mean of
    their shipped values is the table's "Average perf. on 38 datasets" on all its rows, within its last digit (the
    table rounds each value and the average to four digits of a fraction)."""
    config = yaml.safe_load((REPO / "config/examples/openclip-38.yaml").read_text())
    benchmarks = [config["datasets"][name]["published"] for name in config["suites"]["openclip"]]
    assert len(set(benchmarks)) == 38
    shipped = index(read_values())
    with open(DATA / OPENCLIP_RESULTS, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        values = [
            value.value
            for benchmark in benchmarks
            for value in shipped[row["name"], row["pretrained"], benchmark]
            if value.source == OPENCLIP_RESULTS
        ]
        assert len(values) == 38, (row["name"], row["pretrained"])
        assert sum(values) / 38 == pytest.approx(100 * float(row["Average perf. on 38 datasets"]), abs=0.01)


def test_voc2007_multilabel_is_compared_by_clip_benchmark_s_mean_average_precision():
    shipped = index(read_values())
    values = {(v.source, v.metric): v.value for v in shipped["ViT-B-32", "openai", "voc2007_multilabel"]}
    assert values == pytest.approx({("clip_benchmark.csv", "mean_average_precision"): 76.01363658905029})


def test_the_report_shows_a_suites_published_average_beside_the_measured_one(monkeypatch, tmp_path):
    main_table = index([PublishedValue("clipeval-tiny", "tiny-tag", "flickr30k", MEAN_R1, 46.5, OPENCLIP_RESULTS)])
    monkeypatch.setattr(check, "shipped_index", lambda: main_table)
    scored = {**score(), "protocol": "full", "ranking_at": [], "rsum": 0.0, "mean_recall": 0.0}
    scored["counts"] = {"images": 10, "texts": 50}
    for direction in ("t2i", "i2t"):
        scored[direction].update(mean_recall=50.0, mean_rank=3.0, median_rank=2.0)
    (tmp_path / "retrieval.json").write_text(json.dumps(scored))
    suite = {"suite": "openclip", "datasets": ["shapes-test"], "metrics": {"shapes-test": MEAN_R1}}
    suite |= {"models": ["tiny"], "averages": {"tiny": 45.0}, "differences": {}}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    page = results_page("default", [("tiny", "shapes-test", tmp_path / "retrieval.json")], [tmp_path / "suite.json"])
    table = page[page.index("Suite openclip") :]
    assert "<th id=" in table and ">published</th>" in table and ">46.5" in table
