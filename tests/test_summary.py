import csv

import pytest

from clipeval.reporting.summary import summarize
from clipeval.storage.jsonl import write_json


def metrics(r1, extra=None, intervals=False, recall_at=(1, 5, 10)):
    t2i = {
        "R@1": r1,
        "R@5": 50.0,
        "R@10": 60.0,
        "mean_recall": (r1 + 110) / 3,
        "mean_rank": 12.5,
        "median_rank": 4.0,
        **(extra or {}),
    }
    i2t = {"R@1": 20.0, "R@5": 40.0, "R@10": 70.0, "mean_recall": 130 / 3, "mean_rank": 9.0, "median_rank": 3.0}
    result = {
        "task": "retrieval",
        "protocol": "full",
        "recall_at": list(recall_at),
        "ranking_at": [],
        "t2i": t2i,
        "i2t": i2t,
        "rsum": r1 + 240.0,
        "mean_recall": (r1 + 240.0) / 6,
        "counts": {"images": 1000, "texts": 5000},
    }
    if intervals:
        result["intervals"] = {
            "t2i": {name: [value - 1, value + 1] for name, value in t2i.items()},
            "i2t": {name: [value - 1, value + 1] for name, value in i2t.items()},
            "rsum": [r1 + 230.0, r1 + 250.0],
            "mean_recall": [0.0, 100.0],
        }
    return result


def classification(top1):
    return {
        "task": "classification",
        "top1": top1,
        "top5": None,
        "mean_per_class_recall": 60.25,
        "intervals": {"top1": [top1 - 2, top1 + 2], "top5": None, "mean_per_class_recall": [58.0, 62.5]},
        "counts": {"images": 600, "classes": 4, "classes_with_images": 4},
    }


def outputs(tmp_path):
    return {name: tmp_path / f"{name}.out" for name in ("csv", "markdown", "averages", "comparisons", "series")}


def read_csv(path):
    return list(csv.DictReader(open(path)))


def test_rows_in_given_order_with_every_metric(tmp_path):
    write_json(tmp_path / "b.json", metrics(12.3456))
    write_json(tmp_path / "a.json", metrics(30.0, {"R@50": 99.0}, recall_at=(1, 5, 10, 50)))
    summarize([("m2", "flickr", tmp_path / "b.json"), ("m1", "coco", tmp_path / "a.json")], [], outputs(tmp_path))
    rows = read_csv(tmp_path / "csv.out")
    assert [(r["model"], r["dataset"]) for r in rows] == [("m2", "flickr"), ("m1", "coco")]
    assert list(rows[0]) == [
        "model",
        "dataset",
        "task",
        "t2i_R@1",
        "t2i_R@5",
        "t2i_R@10",
        "t2i_R@50",
        "i2t_R@1",
        "i2t_R@5",
        "i2t_R@10",
        "i2t_R@50",
        "rsum",
        "mean_recall",
        "t2i_mean_recall",
        "i2t_mean_recall",
        "t2i_mean_rank",
        "t2i_median_rank",
        "i2t_mean_rank",
        "i2t_median_rank",
        "top1",
        "top5",
        "mean_per_class_recall",
        "mean_average_precision",
        "macro_f1",
        "text_score",
        "image_score",
        "group_score",
        "macro_text_score",
        "jaccard_score",
        "probe_top1",
        "probe_top1_sd",
        "probe_mean_per_class_recall",
        "probe_mean_per_class_recall_sd",
        "protocol",
        "images",
        "texts",
        "classes",
    ]
    assert rows[0]["t2i_R@1"] == "12.3456" and rows[0]["t2i_R@50"] == "" and rows[1]["t2i_R@50"] == "99.0"
    assert rows[0]["t2i_median_rank"] == "4.0" and rows[0]["protocol"] == "full"
    markdown = (tmp_path / "markdown.out").read_text().splitlines()
    table = markdown.index("### Retrieval") + 2
    assert markdown[table].startswith("| model | dataset | task | t2i_R@1 |") and "top1" not in markdown[table]
    assert markdown[table + 2].startswith("| m2 | flickr | retrieval | 12.35 | 50.00 |")


def test_intervals_become_columns_and_brackets(tmp_path):
    write_json(tmp_path / "r.json", metrics(30.0, intervals=True))
    write_json(tmp_path / "c.json", classification(61.5))
    summarize(
        [("m", "retrieval-set", tmp_path / "r.json"), ("m", "classes-set", tmp_path / "c.json")], [], outputs(tmp_path)
    )
    rows = read_csv(tmp_path / "csv.out")
    assert (rows[0]["rsum_ci_low"], rows[0]["rsum_ci_high"], rows[0]["t2i_median_rank_ci_high"]) == (
        "260.0",
        "280.0",
        "5.0",
    )
    assert (rows[1]["top1_ci_low"], rows[1]["top1_ci_high"], rows[1]["top5_ci_low"], rows[1]["top5"]) == (
        "59.5",
        "63.5",
        "",
        "",
    )
    assert rows[1]["rsum_ci_low"] == "" and rows[0]["top1_ci_low"] == ""
    table = (tmp_path / "markdown.out").read_text()
    assert "| 30.00 [29.00, 31.00] |" in table
    assert "| m | classes-set | classification | 61.50 [59.50, 63.50] | n/a | 60.25 [58.00, 62.50] | 600 | 4 |" in table
    assert "_ci_low" not in table


def test_averages_are_unweighted_per_model_and_task(tmp_path):
    write_json(tmp_path / "r1.json", metrics(30.0))
    write_json(tmp_path / "r2.json", metrics(60.0))
    write_json(tmp_path / "c1.json", classification(61.5))
    write_json(tmp_path / "c2.json", classification(70.0))
    summarize(
        [
            ("m", "flickr", tmp_path / "r1.json"),
            ("m", "coco", tmp_path / "r2.json"),
            ("m", "cifar", tmp_path / "c1.json"),
            ("n", "cifar", tmp_path / "c2.json"),
        ],
        [],
        outputs(tmp_path),
    )
    averages = read_csv(tmp_path / "averages.out")
    assert [(a["model"], a["task"], a["metric"], a["datasets"]) for a in averages] == [
        ("m", "retrieval", "mean_recall", "2"),
        ("m", "classification", "top1", "1"),
        ("n", "classification", "top1", "1"),
    ]
    assert float(averages[0]["average"]) == pytest.approx(((270 / 6) + (300 / 6)) / 2)
    assert "## Average over datasets" in (tmp_path / "markdown.out").read_text()


def test_comparisons_get_their_table(tmp_path):
    write_json(tmp_path / "r.json", metrics(30.0))
    comparison = {
        "task": "classification",
        "models": ["a", "b"],
        "difference": {"top1": 2.5, "top5": None, "mean_per_class_recall": -1.0},
        "intervals": {"top1": [0.5, 4.5], "top5": None, "mean_per_class_recall": [-3.0, 1.0]},
    }
    write_json(tmp_path / "cmp.json", {"dataset": "cifar", "baseline": None, "comparisons": [comparison]})
    summarize([("a", "flickr", tmp_path / "r.json")], [tmp_path / "cmp.json"], outputs(tmp_path))
    rows = read_csv(tmp_path / "comparisons.out")
    assert [(r["metric"], r["difference"], r["ci_low"], r["ci_high"]) for r in rows] == [
        ("top1", "2.5", "0.5", "4.5"),
        ("top5", "", "", ""),
        ("mean_per_class_recall", "-1.0", "-3.0", "1.0"),
    ]
    assert (
        "| cifar | a − b | 2.50 [0.50, 4.50] | n/a | -1.00 [-3.00, 1.00] |" in (tmp_path / "markdown.out").read_text()
    )


def test_the_headline_block_groups_directions(tmp_path):
    write_json(tmp_path / "r.json", metrics(30.0, intervals=True))
    write_json(tmp_path / "c.json", classification(61.5))
    summarize(
        [("m", "retrieval-set", tmp_path / "r.json"), ("m", "classes-set", tmp_path / "c.json")], [], outputs(tmp_path)
    )
    markdown = (tmp_path / "markdown.out").read_text()
    block = markdown[markdown.index("<!-- headline") : markdown.index("<!-- /headline -->")].splitlines()
    assert block[2].startswith("**m** on **retrieval-set** (")
    assert block[4] == "| direction | R@1 | R@5 | R@10 | mean recall (CN-CLIP) | mean rank | median rank |"
    assert block[6].startswith("| text→image | 30.00 [29.00, 31.00] |")
    assert block[7].startswith("| image→text | ")
    assert block[9].startswith("Rsum 270.00 [260.00, 280.00], mean recall 45.00")
    assert block[-2] == "| m | classes-set | 61.50 [59.50, 63.50] | n/a | 60.25 [58.00, 62.50] |"


def retrieval_without_r10():
    """A retrieval metrics file scored with recall_at [1, 50]: no R@10, so no Rsum and no mean recall."""
    direction = {"R@1": 30.0, "R@50": 90.0, "mean_rank": 12.5, "median_rank": 4.0}
    return {
        "task": "retrieval",
        "protocol": "full",
        "recall_at": [1, 50],
        "ranking_at": [],
        "t2i": direction,
        "i2t": {**direction, "R@1": 20.0},
        "intervals": {"t2i": {k: [v - 1, v + 1] for k, v in direction.items()}, "i2t": {}},
        "counts": {"images": 1000, "texts": 5000},
    }


def test_k_values_without_10_give_their_columns_and_no_rsum(tmp_path):
    write_json(tmp_path / "r.json", retrieval_without_r10())
    write_json(tmp_path / "c.json", classification(61.5))
    summarize([("m", "flickr", tmp_path / "r.json"), ("m", "cifar", tmp_path / "c.json")], [], outputs(tmp_path))
    rows = read_csv(tmp_path / "csv.out")
    assert list(rows[0])[:13] == [
        "model",
        "dataset",
        "task",
        "t2i_R@1",
        "t2i_R@50",
        "i2t_R@1",
        "i2t_R@50",
        "t2i_mean_rank",
        "t2i_median_rank",
        "i2t_mean_rank",
        "i2t_median_rank",
        "top1",
        "top5",
    ]
    assert not {"rsum", "mean_recall", "t2i_R@10"} & set(rows[0])
    assert rows[0]["t2i_R@50"] == "90.0" and rows[0]["t2i_R@50_ci_high"] == "91.0"
    markdown = (tmp_path / "markdown.out").read_text()
    assert "| direction | R@1 | R@50 | mean rank | median rank |" in markdown
    assert "| text→image | 30.00 [29.00, 31.00] | 90.00 [89.00, 91.00] | 12.50 | 4.00 |" in markdown
    assert "Rsum" not in markdown
    averages = read_csv(tmp_path / "averages.out")
    assert [(a["task"], a["metric"], a["average"]) for a in averages] == [
        ("retrieval", "mean_recall", ""),
        ("classification", "top1", "61.5"),
    ]


def test_the_report_table_shows_every_k_asked_for(tmp_path):
    from clipeval.reporting.tables import results_page

    scored = metrics(30.0, {"R@50": 99.0}, recall_at=(1, 5, 10, 50))
    scored["i2t"]["R@50"] = 98.0
    write_json(tmp_path / "r.json", scored)
    write_json(tmp_path / "k.json", retrieval_without_r10())
    page = results_page("e", [("m", "flickr", tmp_path / "r.json")])
    headers = [cell.split(">")[-1] for cell in page.split("</th>") if 'class="col_heading level1' in cell]
    assert headers == ["R@1", "R@5", "R@10", "R@50", "median rank"] * 2 + ["Rsum", "mean recall"]
    page = results_page("e", [("m", "flickr", tmp_path / "k.json")])
    headers = [cell.split(">")[-1] for cell in page.split("</th>") if 'class="col_heading level1' in cell]
    assert headers == ["R@1", "R@50", "median rank"] * 2


def test_ranking_metrics_get_columns_in_the_summary_and_the_report_table(tmp_path):
    from clipeval.reporting.tables import results_page

    scored = metrics(30.0, intervals=True)
    scored["ranking_at"] = [10]
    for direction, base in (("t2i", 40.0), ("i2t", 50.0)):
        scored[direction].update({"nDCG@10": base, "MAP@10": base - 1, "MRR@10": base - 2})
        scored["intervals"][direction].update(
            {"nDCG@10": [base - 3, base + 3], "MAP@10": [base - 2, base], "MRR@10": [base - 3, base - 1]}
        )
    write_json(tmp_path / "r.json", scored)
    summarize([("m", "flickr", tmp_path / "r.json")], [], outputs(tmp_path))
    row = read_csv(tmp_path / "csv.out")[0]
    columns = list(row)
    ranking = [c for c in columns if c.startswith(("t2i_", "i2t_")) and c[4:] in ("nDCG@10", "MAP@10", "MRR@10")]
    assert ranking == [f"{d}_{name}@10" for d in ("t2i", "i2t") for name in ("nDCG", "MAP", "MRR")]
    assert columns.index("i2t_median_rank") < columns.index("t2i_nDCG@10")
    assert (row["i2t_nDCG@10"], row["i2t_nDCG@10_ci_low"], row["i2t_MRR@10"]) == ("50.0", "47.0", "48.0")
    cells = "40.00 [37.00, 43.00] | 39.00 [38.00, 40.00] | 38.00 [37.00, 39.00] | 50.00 [47.00, 53.00]"
    assert f"| {cells} | 49.00 [48.00, 50.00] | 48.00 [47.00, 49.00] |" in (tmp_path / "markdown.out").read_text()
    page = results_page("e", [("m", "flickr", tmp_path / "r.json")])
    headers = [cell.split(">")[-1] for cell in page.split("</th>") if 'class="col_heading level1' in cell]
    per_direction = ["R@1", "R@5", "R@10", "median rank", "nDCG@10", "MAP@10", "MRR@10"]
    assert headers == per_direction * 2 + ["Rsum", "mean recall"]


@pytest.mark.slow
def test_a_sweep_of_10000_pairs_reaches_the_summary_and_the_tables_through_an_arguments_file(tmp_path):
    """What the workflow does for every command whose list grows with a sweep: the words go to a file (one
    command line could not hold them), and the command reads them back in order."""
    from conftest import run_cli

    from clipeval.planning.argument_files import argument_file

    write_json(tmp_path / "score.json", metrics(12.5))
    pairs = [(f"model-{m:03d}", f"dataset-{d:03d}") for m in range(100) for d in range(100)]
    entries = [word for model, dataset in pairs for word in ("--entry", model, dataset, str(tmp_path / "score.json"))]
    arguments = argument_file(entries, tmp_path / "arguments")
    assert len(" ".join(entries)) > 128 * 1024  # more than Linux lets one argument (a job's `bash -c …`) hold
    out = outputs(tmp_path)
    result = run_cli(
        "summarize",
        "--arguments-file",
        arguments,
        *(word for name, path in out.items() for word in (f"--{name}", path)),
    )
    assert result.returncode == 0, result.stderr
    assert [(row["model"], row["dataset"]) for row in read_csv(out["csv"])] == pairs
    result = run_cli(
        "report-tables",
        "--experiment",
        "sweep",
        "--arguments-file",
        arguments,
        "--results",
        tmp_path / "results.html",
        "--provenance",
        tmp_path / "provenance.html",
    )
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "results.html").read_text()
    assert page.count("model-099") >= 1 and page.count("dataset-099") >= 1


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "{path}: cannot read the arguments file (FileNotFoundError)"),
        ("[1, 2", "{path}: cannot read the arguments file (JSONDecodeError)"),
        ('{"entry": "x"}', "{path}: an arguments file holds a JSON list of strings"),
        ('["--entry", 3]', "{path}: an arguments file holds a JSON list of strings"),
    ],
)
def test_an_unreadable_arguments_file_is_one_line_naming_it(tmp_path, content, message):
    from conftest import run_cli

    path = tmp_path / "arguments.json"
    if content is not None:
        path.write_text(content)
    result = run_cli("summarize", "--arguments-file", path, "--csv", tmp_path / "x.csv")
    assert result.returncode == 1
    assert result.stderr == f"clipeval: error: {message.format(path=path)}\n"
