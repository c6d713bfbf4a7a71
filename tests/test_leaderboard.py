"""clipeval leaderboard: every scored pair of a results folder as models × datasets."""

import html
import json
import re

from clipeval.cli import main
from clipeval.tiers import RULE, assign_tiers

QUERIES = 1000


def ranks_record(task, value, queries=QUERIES):
    """A ranks record whose first round(value%) queries are hits at rank 1 and the rest misses, in both retrieval
    directions: its headline metric is `value`, to the record's resolution."""
    hits = round(value / 100 * queries)
    if task == "retrieval":
        direction = {"query_ids": list(range(queries)), "ranks": [1] * hits + [queries] * (queries - hits)}
        direction["folds"] = [0] * queries
        return {"task": task, "protocol": "full", "folds": 1, "recall_at": [1, 5, 10], "ranking_at": []} | {
            "t2i": direction,
            "i2t": direction,
        }
    labels = [image % 10 for image in range(queries)]
    ranks = [1] * hits + [2] * (queries - hits)
    return {"task": task, "num_classes": 10, "image_ids": list(range(queries)), "labels": labels, "ranks": ranks}


def score_file(
    results, model, dataset, task, value, interval, bootstrap=1000, experiment="default", arch="ViT-B-32", record=None
):
    """A score file and the ranks record beside it (`record`, else one of `value`'s hits)."""
    metric = {"retrieval": "mean_recall", "classification": "top1"}[task]
    config = {
        "model": {"name": model, "arch": arch, "pretrained": "openai"},
        "metrics": {"bootstrap": bootstrap, "protocol": "full"},
        "knn": {"top_k": 10},
        "extract": {},
    }
    path = results / "experiments" / experiment / "scores" / model / dataset / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({metric: value, "intervals": {metric: interval}, "task": task, "provenance": {"config": config}})
    )
    (path.parent / f"{task}-ranks.json").write_text(json.dumps(record or ranks_record(task, value)))
    return path


def test_every_pair_in_one_table_with_pairs_scored_otherwise_marked(tmp_path, capsys):
    results = tmp_path / "results"
    score_file(results, "vit-b", "flickr", "retrieval", 80.123, [79.5, 80.75])
    score_file(results, "vit-b", "cifar10", "classification", 91.0, [90.0, 92.0])
    score_file(results, "epoch-2", "flickr", "retrieval", 70.0, [69.0, 71.0])
    score_file(results, "epoch-3", "flickr", "retrieval", 75.0, [74.0, 76.0], bootstrap=500, experiment="epochs")
    # The same model and settings in another experiment: the same row.
    score_file(results, "vit-b", "flickr", "retrieval", 80.123, [79.5, 80.75], experiment="again")
    page = tmp_path / "board.html"
    assert (
        main(["leaderboard", "--results", str(results), "--output", str(tmp_path / "board.md"), "--html", str(page)])
        == 0
    )
    expected = (
        "| model | cifar10 (classification, top1) | flickr (retrieval, mean_recall) |\n"
        "| --- | --- | --- |\n"
        "| epoch-2 |  | 70.00 [69.00, 71.00] T2 |\n"
        "| epoch-3 |  | 75.00 [74.00, 76.00] (1) |\n"
        "| vit-b | 91.00 [90.00, 92.00] | 80.12 [79.50, 80.75] T1 |\n"
        "\n"
        f"{RULE}\n"
        "\n"
        "(1) epoch-3 on flickr: metrics.bootstrap: 500 (column: 1000)\n"
    )
    assert capsys.readouterr().out == expected
    assert (tmp_path / "board.md").read_text() == expected
    cells = re.findall(r"<t[hd]>(.*?)</t[hd]>", page.read_text())
    assert cells == [
        cell.strip() for line in expected.splitlines()[:5] if "---" not in line for cell in line.split("|")[1:-1]
    ]
    assert re.findall(r"<li>(.*?)</li>", page.read_text()) == [
        "epoch-3 on flickr: metrics.bootstrap: 500 (column: 1000)"
    ]


def test_a_model_that_experiments_define_or_score_otherwise_has_a_row_for_each(tmp_path, capsys):
    results = tmp_path / "results"
    score_file(results, "vit", "flickr", "retrieval", 80.0, [79.0, 81.0], experiment="first")
    score_file(results, "vit", "coco", "retrieval", 60.0, [59.0, 61.0], experiment="second", arch="ViT-B-16")
    score_file(results, "tiny", "flickr", "retrieval", 10.0, [9.0, 11.0], experiment="first")
    score_file(results, "tiny", "flickr", "retrieval", 10.0, [8.0, 12.0], bootstrap=100, experiment="second")
    assert main(["leaderboard", "--results", str(results)]) == 0
    assert capsys.readouterr().out == (
        "| model | coco (retrieval, mean_recall) | flickr (retrieval, mean_recall) |\n"
        "| --- | --- | --- |\n"
        "| tiny (first) |  | 10.00 [9.00, 11.00] T2 |\n"
        "| tiny (second) |  | 10.00 [8.00, 12.00] (1) |\n"
        "| vit (first) |  | 80.00 [79.00, 81.00] T1 |\n"
        "| vit (second) | 60.00 [59.00, 61.00] |  |\n"
        "\n"
        f"{RULE}\n"
        "\n"
        "(1) tiny (second) on flickr: metrics.bootstrap: 100 (column: 1000)\n"
    )


def test_the_page_shows_names_as_text(tmp_path):
    from clipeval.leaderboard import html_page

    table = {"datasets": [("<d>", "retrieval", "mean_recall")], "models": ["<script>"], "cells": {}, "notes": ["&"]}
    page = html_page(table, "<r>")
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;d&gt; (retrieval" in page
    assert "<li>&amp;</li>" in page and "Leaderboard of &lt;r&gt;" in page


def test_a_folder_without_scores_says_so(tmp_path, capsys):
    assert main(["leaderboard", "--results", str(tmp_path)]) == 0
    assert capsys.readouterr().out == (
        f"no scores in {tmp_path} (each experiment's are under {tmp_path}/experiments/NAME/scores/MODEL/DATASET/)\n"
    )


def test_a_score_file_without_its_metric_is_named(tmp_path, capsys):
    path = tmp_path / "experiments/default/scores/vit-b/flickr/retrieval.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"task": "retrieval"}')
    assert main(["leaderboard", "--results", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"clipeval: error: {path}: no mean_recall value, so not a clipeval score file\n"


def test_pairs_an_experiment_no_longer_evaluates_are_left_out_with_a_note(tmp_path, capsys):
    """A config that drops a model leaves that model's score files from earlier runs: the leaderboard showed them
    as the experiment's. The experiment's record lists the pairs its last successful run evaluated."""
    results = tmp_path / "results"
    score_file(results, "vit-b", "flickr", "retrieval", 80.0, [79.0, 81.0])
    score_file(results, "dropped", "flickr", "retrieval", 10.0, [9.0, 11.0])
    score_file(results, "other", "flickr", "retrieval", 50.0, [49.0, 51.0], experiment="unrecorded")
    flickr = {"flickr": {"format": "karpathy", "task": "retrieval"}}
    record = {"experiment": "default", "config_files": ["config/config.yaml"], "datasets": flickr, "models": {}}
    (results / "experiments/default/experiment.json").write_text(
        json.dumps({**record, "scores": {"vit-b on flickr": {}}})
    )
    assert main(["leaderboard", "--results", str(results)]) == 0
    assert capsys.readouterr().out == (
        "note: left out 1 score file(s) of pairs their experiment no longer evaluates (default: dropped on flickr):"
        f" earlier runs left them in {results}/experiments/NAME/scores/MODEL/DATASET/\n"
        "| model | flickr (retrieval, mean_recall) |\n"
        "| --- | --- |\n"
        "| other | 50.00 [49.00, 51.00] T2 |\n"
        "| vit-b | 80.00 [79.00, 81.00] T1 |\n"
        "\n"
        f"{RULE}\n"
    )


def test_each_tier_is_led_by_the_best_model_not_yet_in_one():
    asked = []
    tied_pairs = {("a", "b"), ("c", "e")}

    def tied(leader, model):
        asked.append((leader, model))
        return (leader, model) in tied_pairs

    assert assign_tiers(["a", "b", "c", "d", "e"], tied) == {"a": 1, "b": 1, "c": 2, "e": 2, "d": 3}
    assert asked == [("a", "b"), ("a", "c"), ("a", "d"), ("a", "e"), ("c", "d"), ("c", "e")]


def classification_record(hits, images=200, image_ids=None):
    """The first `hits` images classified right (rank 1), the rest wrong (rank 2)."""
    return {
        "task": "classification",
        "num_classes": 10,
        "image_ids": image_ids or list(range(images)),
        "labels": [image % 10 for image in range(images)],
        "ranks": [1] * hits + [2] * (images - hits),
    }


def test_models_the_data_cannot_tell_from_the_column_s_best_share_its_tier(tmp_path, capsys):
    """Decided by hand, whatever the replicates draw. Of 200 images, `twin` gets right the very images `best` does,
    so every replicate's difference is 0. `one-off` misses one image `best` gets: a replicate leaves that image
    out with probability (199/200)^200 = 0.37, far above the 2.5% of the interval's lower end, so the interval
    reaches 0. `half` misses 100 of them: a difference of 50 points, give or take 3.5, never 0 in 1,000
    replicates. Below `half`, which leads T2, the same holds for `half-minus-one` and `none`."""
    results = tmp_path / "results"
    hits = {"best": 200, "twin": 200, "one-off": 199, "half": 100, "half-minus-one": 99, "none": 0}
    for model, count in hits.items():
        record = classification_record(count)
        score_file(results, model, "cifar10", "classification", count / 2, [0.0, 100.0], record=record)
    assert main(["leaderboard", "--results", str(results), "--html", str(tmp_path / "board.html")]) == 0
    assert capsys.readouterr().out == (
        "| model | cifar10 (classification, top1) |\n"
        "| --- | --- |\n"
        "| best | 100.00 [0.00, 100.00] T1 |\n"
        "| half | 50.00 [0.00, 100.00] T2 |\n"
        "| half-minus-one | 49.50 [0.00, 100.00] T2 |\n"
        "| none | 0.00 [0.00, 100.00] T3 |\n"
        "| one-off | 99.50 [0.00, 100.00] T1 |\n"
        "| twin | 100.00 [0.00, 100.00] T1 |\n"
        "\n"
        f"{RULE}\n"
    )
    page = (tmp_path / "board.html").read_text()
    assert f"<p>{html.escape(RULE)}</p>" in page and "<td>100.00 [0.00, 100.00] T1</td>" in page


def test_a_model_scored_on_other_images_gets_no_tier_and_a_note_saying_why(tmp_path, capsys):
    results = tmp_path / "results"
    score_file(results, "best", "cifar10", "classification", 100.0, [99.0, 100.0], record=classification_record(200))
    other = classification_record(0, image_ids=list(range(1, 201)))
    path = score_file(results, "elsewhere", "cifar10", "classification", 0.0, [0.0, 1.0], record=other)
    assert main(["leaderboard", "--results", str(results)]) == 0
    assert capsys.readouterr().out == (
        "| model | cifar10 (classification, top1) |\n"
        "| --- | --- |\n"
        "| best | 100.00 [99.00, 100.00] T1 |\n"
        "| elsewhere | 0.00 [0.00, 1.00] (1) |\n"
        "\n"
        f"{RULE}\n"
        "\n"
        f"(1) elsewhere on cifar10: no tier: {path.with_name('classification-ranks.json')}: its images or labels"
        " differ from the first model's; a paired comparison needs the same queries\n"
    )


def test_a_column_scored_without_bootstrap_has_no_tiers(tmp_path, capsys):
    results = tmp_path / "results"
    for model, value in (("first", 80.0), ("second", 10.0)):
        score_file(results, model, "flickr", "retrieval", value, None, bootstrap=0)
    assert main(["leaderboard", "--results", str(results)]) == 0
    assert capsys.readouterr().out == (
        "| model | flickr (retrieval, mean_recall) |\n| --- | --- |\n| first | 80.00 |\n| second | 10.00 |\n"
    )


def test_a_ranks_record_that_is_not_one_is_named(tmp_path, capsys):
    results = tmp_path / "results"
    score_file(results, "first", "flickr", "retrieval", 80.0, [79.0, 81.0])
    path = score_file(results, "second", "flickr", "retrieval", 10.0, [9.0, 11.0], record={"task": "retrieval"})
    ranks = path.with_name("retrieval-ranks.json")
    assert main(["leaderboard", "--results", str(results)]) == 1
    assert capsys.readouterr().err == (
        f"clipeval: error: {ranks}: not a ranks record (the score commands write one with --ranks-output)\n"
    )
