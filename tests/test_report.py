"""The report's numbers and choices, against brute-force computations of the same definitions."""

import csv
import json

import numpy as np
import pytest
from conftest import run_cli

from clipeval.metric_catalog import CLASSIFICATION_METRICS
from clipeval.reporting.failures import confused_pairs, confusion_examples, top_items, worst_queries
from clipeval.reporting.rank_curves import rank_histogram, recall_curve
from clipeval.reporting.tables import columns_of, metric_table, provenance_page, results_page


def test_recall_curve_is_the_share_of_ranks_within_k_averaged_over_folds():
    ranks = np.array([1, 3, 3, 7, 120, 2, 2, 50])
    folds = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    curve = recall_curve(ranks, folds, max_k=100)
    for k in (1, 2, 3, 7, 49, 50, 100):
        fold0 = 100 * sum(r <= k for r in [1, 3, 3, 7]) / 4
        fold1 = 100 * sum(r <= k for r in [120, 2, 2, 50]) / 4
        assert curve[k - 1] == pytest.approx((fold0 + fold1) / 2)


def test_rank_histogram_bins_cover_every_query_once_up_to_the_worst_rank():
    ranks = np.array([1, 1, 2, 3, 5, 6, 10, 11, 400])
    assert rank_histogram(ranks, 400) == [
        (1, 1, 2),
        (2, 2, 1),
        (3, 5, 2),
        (6, 10, 2),
        (11, 20, 1),
        (21, 50, 0),
        (51, 100, 0),
        (101, 200, 0),
        (201, None, 1),
    ]
    # another model's worse rank adds the bins it needs, empty for this one
    assert rank_histogram(np.array([1]), 30)[-2:] == [(11, 20, 0), (21, None, 0)]


def test_worst_queries_are_the_highest_ranks_ties_by_ascending_id():
    query_ids = np.array([40, 10, 30, 20])
    ranks = np.array([5, 9, 9, 1])
    assert query_ids[worst_queries(query_ids, ranks, 3)].tolist() == [10, 30, 40]


def test_top_items_follow_the_ranking_rule_on_ties():
    gallery = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    ids, scores = top_items(np.array([1, 0], dtype=np.float32), gallery, np.array([9, 3, 4, 7]), 3)
    assert ids.tolist() == [4, 9, 7]  # the two tied at 1.0 by ascending id
    assert scores.tolist() == pytest.approx([1.0, 1.0, 0.6])


def test_confused_pairs_and_examples():
    labels = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    predicted = np.array([1, 1, 0, 0, 1, 0, 1, 2])
    assert confused_pairs(labels, predicted, 5) == [(0, 1, 2), (1, 0, 1), (2, 0, 1), (2, 1, 1)]
    image_ids = np.array([17, 3, 8, 1, 2, 5, 6, 7])
    assert confusion_examples(image_ids, labels, predicted, 0, 1, 5) == [3, 17]
    assert confused_pairs(labels, labels, 5) == []


def test_the_best_model_of_each_dataset_is_bold_and_intervals_follow_values():
    rows = [
        {
            "dataset": "a",
            "model": "m1",
            "top1": 50.0,
            "top1_ci_low": 40.0,
            "top1_ci_high": 60.0,
            "top5": 90.0,
            "mean_per_class_recall": None,
        },
        {"dataset": "a", "model": "m2", "top1": 70.0, "top5": 90.0, "mean_per_class_recall": 1.0},
        {"dataset": "b", "model": "m1", "top1": 10.0, "top5": 20.0, "mean_per_class_recall": 3.0},
    ]
    html = metric_table("t", rows, columns_of(m for m in CLASSIFICATION_METRICS if m.tabled), "caption")
    assert '50.00 <span class="interval">[40.00, 60.00]</span>' in html
    # top-1 of m2 on a, and both tied top-5 values on a; nothing on b (one model) nor beside n/a
    assert "#T_t_row0_col1, #T_t_row1_col0, #T_t_row1_col1 {\n  font-weight: bold;\n}" in html
    assert html.count("font-weight: bold") == 1
    assert "n/a" in html


@pytest.mark.slow
def test_report_commands_write_figures_and_their_numbers(tmp_path):
    ranks = {
        "task": "retrieval",
        "protocol": "full",
        "folds": 1,
        "recall_at": [1, 5, 10],
        "ranking_at": [],
        "t2i": {"query_ids": [1, 2, 3, 4], "ranks": [1, 2, 30, 1], "folds": [0, 0, 0, 0]},
        "i2t": {"query_ids": [7, 8], "ranks": [1, 4], "folds": [0, 0]},
    }
    (tmp_path / "ranks.json").write_text(json.dumps(ranks))
    result = run_cli(
        "plot-dataset",
        "--dataset",
        "d",
        "--entry",
        "m",
        str(tmp_path / "ranks.json"),
        "--recall-curves",
        str(tmp_path / "curves.png"),
        "--rank-distribution",
        str(tmp_path / "ranks.png"),
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(open(tmp_path / "curves.csv")))
    assert [(r["direction"], r["k"], r["recall"]) for r in rows if r["k"] in ("1", "30")] == [
        ("t2i", "1", "50.0"),
        ("t2i", "30", "100.0"),
        ("i2t", "1", "50.0"),
        ("i2t", "30", "100.0"),
    ]

    (tmp_path / "metrics.json").write_text(json.dumps({"task": "retrieval"}))
    refused = run_cli(
        "plot-dataset",
        "--dataset",
        "d",
        "--entry",
        "m",
        str(tmp_path / "metrics.json"),
        "--class-recall",
        str(tmp_path / "classes.png"),
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"clipeval: error: {tmp_path / 'metrics.json'}: not a classification metrics file"
        " (score-classification writes one)"
    ]
    assert not (tmp_path / "classes.png").exists()


@pytest.mark.slow
def test_the_gallery_commands_refuse_bad_counts_and_the_wrong_ranks_record(shapes_dataset, tmp_path):
    outputs = {"--t2i-output": tmp_path / "t2i.png", "--i2t-output": tmp_path / "i2t.png"}

    def gallery(ranks, *counts):
        return run_cli(
            "retrieval-failures",
            "--title",
            "m on d",
            "--images",
            shapes_dataset / "images.lmdb",
            "--image-feats",
            tmp_path / "images.jsonl",
            "--texts",
            shapes_dataset / "texts.jsonl",
            "--text-feats",
            tmp_path / "texts.jsonl",
            "--ranks",
            ranks,
            *counts,
            *[str(item) for pair in outputs.items() for item in pair],
        )

    (tmp_path / "ranks.json").write_text(
        json.dumps(
            {"task": "classification", "num_classes": 2, "image_ids": [10, 11], "labels": [0, 1], "ranks": [1, 2]}
        )
    )
    for option in ("--failures", "--shown", "--thumbnail"):
        refused = gallery(tmp_path / "ranks.json", option, "0")
        assert (refused.returncode, refused.stderr.strip().splitlines()) == (
            1,
            [f"clipeval: error: {option} must be at least 1"],
        )
    refused = gallery(tmp_path / "ranks.json")
    assert (refused.returncode, refused.stderr.strip().splitlines()) == (
        1,
        [f"clipeval: error: {tmp_path / 'ranks.json'}: a classification ranks record, not retrieval"],
    )

    # A ranks record of other features than those given: its query has none here.
    from clipeval.data.captions import load_captions

    captions = load_captions(shapes_dataset / "texts.jsonl")
    image_ids = sorted({int(i) for ids in captions.image_ids for i in ids})
    with open(tmp_path / "images.jsonl", "w") as handle:
        handle.writelines(json.dumps({"image_id": i, "feature": [1.0, 0.0]}) + "\n" for i in image_ids)
    with open(tmp_path / "texts.jsonl", "w") as handle:
        handle.writelines(
            json.dumps({"text_id": int(i), "feature": [0.0, 1.0]}) + "\n" for i in captions.text_ids.tolist()
        )
    record = {
        "task": "retrieval",
        "protocol": "full",
        "folds": 1,
        "recall_at": [1],
        "ranking_at": [],
        "t2i": {"query_ids": [999999], "ranks": [3], "folds": [0]},
        "i2t": {"query_ids": image_ids[:1], "ranks": [2], "folds": [0]},
    }
    (tmp_path / "other.json").write_text(json.dumps(record))
    refused = gallery(tmp_path / "other.json")
    assert (refused.returncode, refused.stderr.strip().splitlines()) == (
        1,
        [
            f"clipeval: error: {tmp_path / 'other.json'}: t2i query id 999999 has no features in"
            f" {tmp_path / 'texts.jsonl'}"
        ],
    )
    assert not [path for path in outputs.values() if path.exists()]


def classification_metrics(config):
    """A classification metrics record with its provenance, as score-classification writes it."""
    return {
        "task": "classification",
        "top1": 41.0,
        "top5": 93.0,
        "mean_per_class_recall": 40.0,
        "counts": {"images": 6, "classes": 2},
        "provenance": {
            "versions": {"torch": "2.14.1"},
            "dataset": {"checksum": "sha256:d"},
            "model": {"weights": "sha256:w"},
            "config": config,
        },
    }


def test_the_results_page_holds_every_pair(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps(classification_metrics({"model": {"name": "m"}})))
    page = results_page("exp", [("m", "cifar", str(tmp_path / "m.json"))])
    assert page.startswith("<!DOCTYPE html>") and "Zero-shot classification" in page and "41.00" in page
    assert "Image–text retrieval" not in page


def test_figures_draw_dollar_signs_and_markup_in_names_as_text(tmp_path):
    """Class names, captions and titles are data: a `$` pair is not read as mathtext (an unbalanced one would
    stop the figure with a parse error)."""
    from clipeval.reporting.gallery_plots import plot_confusion

    names = [r"a $\frac{1$ b", "$5 and $10", "<b>&amp;</b>", "\u05e9\u05dc\u05d5\u05dd"]
    path = tmp_path / "confusion.png"
    plot_confusion(r"m$\alpha on d$", np.eye(4, dtype=int), names, path)
    assert path.stat().st_size > 1000


def test_the_report_pages_show_markup_in_names_and_paths_as_text(tmp_path):
    """Paths and names come from users' files and folders: every page writes them escaped, and text in any
    script and direction as it is."""
    markup = '<img src=x onerror="alert(1)">'
    others = "$5 and $10 \u200f\u05e9\u05dc\u05d5\u05dd 一只猫"
    config = {"dataset": {"images": f"data/{markup}/{others}/"}}
    (tmp_path / "m.json").write_text(json.dumps(classification_metrics(config)))
    entries = [(f"m{markup}{others}", f"d{markup}{others}", str(tmp_path / "m.json"))]
    for page in (results_page(f"e{markup}", entries), provenance_page(f"e{markup}", entries)):
        assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
        assert page.count(others) >= 2, page  # the model's and the dataset's names at least


# What users' captions and class names hold: markup, dollar pairs (valid and broken mathtext), right-to-left
# text behind a direction mark, Chinese.
SHOWN_TEXTS = [
    "<b>bold</b> &amp; <img src=x>",
    "$5 and $10",
    r"a $\frac{1$ b",
    "\u200f\u05e9\u05dc\u05d5\u05dd",
    "一只猫坐在垫子上",
]


def drawn_texts(monkeypatch):
    """Every text matplotlib draws from now on: (string, parsed as math?, through TeX?)."""
    from matplotlib.text import Text

    drawn, draw = [], Text.draw

    def recording(self, renderer):
        drawn.append((self.get_text(), self.get_parse_math(), self.get_usetex()))
        return draw(self, renderer)

    monkeypatch.setattr(Text, "draw", recording)
    return drawn


# A glyph no font of the figures has is drawn as an empty box, which Matplotlib only warns of: here it fails.
@pytest.mark.filterwarnings("error:Glyph .* missing from font")
def test_every_figure_draws_captions_and_class_names_as_the_literal_text(tmp_path, monkeypatch):
    """The galleries, the confusion figures and the per-class recall, given SHOWN_TEXTS as every caption,
    class name and title: each string is drawn as written (no mathtext, no TeX), whole or wrapped at spaces."""
    from PIL import Image

    from clipeval.reporting.dataset_plots import plot_class_recall
    from clipeval.reporting.failures import Failure
    from clipeval.reporting.gallery_plots import (
        plot_confused_pairs,
        plot_confusion,
        plot_image_to_text,
        plot_text_to_image,
    )

    drawn = drawn_texts(monkeypatch)
    names = SHOWN_TEXTS
    captions = dict(enumerate(names))
    image = Image.new("RGB", (8, 8))

    def thumbnails(image_id):
        return image

    failures = [Failure(query_id=i, rank=3, positives=[i], retrieved=[4, 3], scores=[0.5, 0.25]) for i in range(2)]
    title = f"m on d {names[1]}"
    plot_text_to_image(title, failures, captions, thumbnails, tmp_path / "t2i.png")
    plot_image_to_text(title, failures, captions, {0: [0, 1], 1: [2, 3, 4]}, thumbnails, tmp_path / "i2t.png")
    confusion = np.arange(25).reshape(5, 5)
    plot_confusion(title, confusion, names, tmp_path / "confusion.png")
    plot_confused_pairs(
        title, [(0, 1, 3), (2, 4, 1)], [[0, 1], [2]], names, np.full(5, 9), thumbnails, tmp_path / "p.png"
    )
    per_class = {"m": {name: {"recall": 0.5, "support": 4} for name in names}}
    plot_class_recall(f"d {names[2]}", per_class, tmp_path / "recall.png")

    assert all(not parse_math and not usetex for _, parse_math, usetex in drawn)
    joined = " ".join(" ".join(text.split()) for text, _, _ in drawn)
    for name in names:
        assert " ".join(name.split()) in joined, name
    assert title in joined
