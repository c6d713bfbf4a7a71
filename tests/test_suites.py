"""Suites: each model's average of its datasets' main metrics, with intervals and paired differences, against
the averages of the scores the score stages write."""

import json

import numpy as np
import pytest
from test_compositionality import random_examples
from test_compositionality import score as score_choices
from test_ranks import random_retrieval
from test_ranks import score as score_ranks

from clipeval.classification.metrics import score_classification
from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import write_json
from clipeval.suites import score_suite


def classification(rng, noise):
    labels = rng.integers(0, 4, size=200)
    classes = rng.normal(size=(4, 8)).astype(np.float32)
    images = (classes[labels] + rng.normal(scale=noise, size=(200, 8))).astype(np.float32)
    return score_classification(np.arange(200), images, classes, labels, ["a", "b", "c", "d"])


def two_models(tmp_path):
    """{dataset: {model: ranks record path}} and {dataset: {model: metrics}} of two models on a retrieval, a
    classification and a compositionality set; the second model's features are noisier."""
    ranks, scores = {}, {}
    for model, noise in (("sharp", 0.5), ("blurred", 1.5)):
        rng = np.random.default_rng(7)
        truth, images, texts = random_retrieval(rng, 300, noise=noise)
        results = {
            "flickr": score_ranks(truth, images, texts),
            "cifar": classification(rng, noise),
            "sugarcrepe": score_choices(*random_examples(rng, 200, noise)),
        }
        for dataset, (metrics, record) in results.items():
            path = tmp_path / f"{model}-{dataset}.json"
            write_json(path, record)
            ranks.setdefault(dataset, {})[model] = path
            scores.setdefault(dataset, {})[model] = metrics
    return ranks, scores


def test_a_suite_averages_each_datasets_main_metric_with_paired_intervals(tmp_path):
    ranks, scores = two_models(tmp_path)
    suite = score_suite("mixed", ["flickr", "cifar", "sugarcrepe"], ranks, replicates=200, seed=0)
    main = {"flickr": "mean_recall", "cifar": "top1", "sugarcrepe": "text_score"}
    assert suite["metrics"] == main and suite["models"] == ["sharp", "blurred"]
    for model in ("sharp", "blurred"):
        expected = np.mean([scores[dataset][model][metric] for dataset, metric in main.items()])
        assert suite["averages"][model] == pytest.approx(expected)
        low, high = suite["intervals"]["averages"][model]
        assert low <= suite["averages"][model] <= high
    difference = suite["differences"]["sharp − blurred"]
    assert difference == pytest.approx(suite["averages"]["sharp"] - suite["averages"]["blurred"]) and difference > 0
    low, high = suite["intervals"]["differences"]["sharp − blurred"]
    separate = sum(np.diff(suite["intervals"]["averages"][m])[0] for m in ("sharp", "blurred"))
    assert low <= difference <= high and high - low < separate
    assert score_suite("mixed", ["flickr"], ranks, baseline="blurred")["differences"].keys() == {"sharp − blurred"}


def test_a_suite_whose_models_differ_between_datasets_is_refused(tmp_path):
    ranks, _ = two_models(tmp_path)
    ranks["cifar"].pop("blurred")
    with pytest.raises(ClipevalError, match=r"^suite mixed: dataset cifar has models \['sharp'\], not"):
        score_suite("mixed", ["flickr", "cifar"], ranks)


def test_a_dataset_that_names_its_benchmark_is_averaged_by_the_metric_open_clip_s_table_reports(tmp_path):
    """DataComp's main metrics: mean per-class recall for Oxford-IIIT Pet, the mean R@1 of both directions for
    Flickr30k; a dataset naming no benchmark keeps its task's."""
    ranks, scores = two_models(tmp_path)
    benchmarks = {"flickr": "flickr30k", "cifar": "vtab/pets"}
    suite = score_suite("openclip", ["flickr", "cifar", "sugarcrepe"], ranks, benchmarks=benchmarks)
    assert suite["metrics"] == {"flickr": "mean_R@1", "cifar": "mean_per_class_recall", "sugarcrepe": "text_score"}
    for model in ("sharp", "blurred"):
        flickr = scores["flickr"][model]
        mean_r1 = (flickr["t2i"]["R@1"] + flickr["i2t"]["R@1"]) / 2
        values = [mean_r1, scores["cifar"][model]["mean_per_class_recall"], scores["sugarcrepe"][model]["text_score"]]
        assert suite["averages"][model] == pytest.approx(np.mean(values))
    # A benchmark of another task than the dataset's is not its.
    assert score_suite("s", ["cifar"], ranks, benchmarks={"cifar": "flickr30k"})["metrics"] == {"cifar": "top1"}


def test_the_published_average_needs_the_main_table_s_value_of_every_dataset():
    from clipeval.published.check import published_average

    def row(dataset, metric, value, source="open_clip results", model="m"):
        return {"model": model, "dataset": dataset, "source": source, "metric": metric, "published": value}

    metrics = {"pets": "mean_per_class_recall", "flickr": "mean_R@1"}
    rows = [
        row("pets", "mean_per_class_recall", 80.0),
        row("pets", "top1", 70.0),  # CLIP_benchmark's top-1: not the metric averaged
        row("pets", "mean_per_class_recall", 10.0, source="CLIP_benchmark"),
        row("flickr", "mean R@1 of both directions", 60.0),
        row("flickr", "mean R@1 of both directions", 5.0, model="other"),
    ]
    assert published_average("m", metrics, rows) == pytest.approx(70.0)
    assert published_average("m", metrics, rows[:3]) is None
    assert published_average("other", metrics, rows) is None


def test_the_summary_shows_the_published_average_beside_the_measured_one(tmp_path):
    from clipeval.reporting.summary import suites_markdown

    ranks, _ = two_models(tmp_path)
    suite = score_suite("openclip", ["cifar"], ranks, benchmarks={"cifar": "vtab/pets"})
    published = [
        {"model": "sharp", "dataset": "cifar", "source": "open_clip results", "metric": "mean_per_class_recall"}
        | {"published": 81.25}
    ]
    lines = suites_markdown([suite], published)
    table = lines[lines.index("**openclip**: cifar (mean_per_class_recall)") + 2 :][:4]
    assert table == [
        "| model | value | published |",
        "|---|---|---|",
        f"| sharp | {suite['averages']['sharp']:.2f} | 81.25 |",
        f"| blurred | {suite['averages']['blurred']:.2f} | n/a |",
    ]
    assert "| model | value |" in suites_markdown([suite], [])


def test_dollar_street_enters_by_its_worst_income_groups_top5_with_paired_intervals(tmp_path):
    from clipeval.comparison import compare_models

    ranks, scores = {}, {}
    for model, noise in (("sharp", 0.8), ("blurred", 1.6)):
        rng = np.random.default_rng(3)
        labels = rng.integers(0, 8, size=300)
        classes = rng.normal(size=(8, 8)).astype(np.float32)
        images = (classes[labels] + rng.normal(scale=noise, size=(300, 8))).astype(np.float32)
        income = np.arange(300) % 4
        metrics, record = score_classification(
            np.arange(300), images, classes, labels, list("abcdefgh"), 100, 0, {"income_ds": income}
        )
        write_json(tmp_path / f"{model}.json", record)
        ranks.setdefault("street", {})[model] = tmp_path / f"{model}.json"
        scores[model] = metrics
        by_hand = min(100.0 * np.mean(np.array(record["ranks"])[income == group] <= 5) for group in range(4))
        assert metrics["worst_group"]["income_ds"]["top5"] == pytest.approx(by_hand)
        low, high = metrics["intervals"]["worst_group"]["income_ds"]["top5"]
        assert low <= by_hand <= high
    suite = score_suite("s", ["street"], ranks, replicates=100, benchmarks={"street": "fairness/dollar_street"})
    assert suite["metrics"] == {"street": "worst_group/income_ds/top5"}
    for model in ("sharp", "blurred"):
        assert suite["averages"][model] == pytest.approx(scores[model]["worst_group"]["income_ds"]["top5"])
    records = [json.loads((tmp_path / f"{m}.json").read_text()) for m in ("sharp", "blurred")]
    compared = compare_models(("sharp", "blurred"), *records, "blurred.json", 100, 0)
    worst = [scores[m]["worst_group"]["income_ds"]["top5"] for m in ("sharp", "blurred")]
    assert compared["difference"]["worst_group"]["income_ds"]["top5"] == pytest.approx(worst[0] - worst[1])
    other = {**records[1], "groups": {"income_ds": [0] * 300}}
    with pytest.raises(ClipevalError, match="^blurred.json: its images' groups differ from the first model's$"):
        compare_models(("sharp", "blurred"), records[0], other, "blurred.json")


def test_iwildcam_enters_by_its_macro_f1_and_a_record_without_predictions_is_scored_again(tmp_path):
    ranks, scores = two_models(tmp_path)
    suite = score_suite("s", ["cifar"], ranks, replicates=50, benchmarks={"cifar": "wilds/iwildcam"})
    assert suite["metrics"] == {"cifar": "macro_f1"}
    for model in ("sharp", "blurred"):
        assert suite["averages"][model] == pytest.approx(scores["cifar"][model]["macro_f1"])
    path = ranks["cifar"]["blurred"]
    older = {key: value for key, value in json.loads(path.read_text()).items() if key != "predicted"}
    write_json(path, older)
    with pytest.raises(ClipevalError) as refused:  # the second model's record is the older one: it is named
        score_suite("s", ["cifar"], ranks, benchmarks={"cifar": "wilds/iwildcam"})
    assert str(refused.value) == (
        f"{path}: suite s averages macro_f1, which this classification result does not have (scored before ranks"
        " records kept each image's predicted class: score it again)"
    )


def test_the_suite_figure_shows_each_dataset_by_the_metric_its_average_takes(tmp_path):
    from clipeval.reporting.suite_plot import suite_points

    ranks, scores = two_models(tmp_path)
    benchmarks = {"flickr": "flickr30k", "cifar": "vtab/pets"}
    suite = score_suite("openclip", ["flickr", "cifar", "sugarcrepe"], ranks, benchmarks=benchmarks)
    by_pair = {(model, dataset): scores[dataset][model] for dataset in scores for model in scores[dataset]}
    for model in ("sharp", "blurred"):
        points = [row for row in suite_points(suite, by_pair) if row[0] == model]
        assert [row[2] for row in points[:3]] == ["mean_R@1", "mean_per_class_recall", "text_score"]
        assert np.mean([row[3] for row in points[:3]]) == pytest.approx(points[3][3])
