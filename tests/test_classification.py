"""Zero-shot classification: prompt ensembling, ranking and metrics against scikit-learn."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    confusion_matrix,
    f1_score,
    precision_recall_fscore_support,
    top_k_accuracy_score,
)

from clipeval.classification.metrics import (
    align_labels,
    class_embeddings,
    classification_metrics,
    load_classes,
    load_labels,
    prompts_for,
    ranked_classes,
)
from clipeval.errors import ClipevalError


def test_prompts_are_every_name_in_every_template():
    from clipeval.classification.metrics import ClassSpec

    spec = ClassSpec(["cat", "dog"], ["a {}.", "a photo of a {}."])
    assert prompts_for(spec) == ["a cat.", "a photo of a cat.", "a dog.", "a photo of a dog."]


def test_class_embedding_is_the_renormalised_mean_of_its_prompts():
    prompts = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]], dtype=np.float32)
    classes = class_embeddings(prompts, 2)
    assert np.allclose(classes[0], [2**-0.5, 2**-0.5, 0])
    assert np.allclose(classes[1], [0, 0, 1])


def test_ties_go_to_the_lower_class_index():
    images = np.array([[1.0, 0.0]], dtype=np.float32)
    classes = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    assert ranked_classes(images, classes).tolist() == [[1, 2, 0]]


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_metrics_match_scikit_learn(data):
    num_classes = data.draw(st.integers(6, 12))
    n = data.draw(st.integers(1, 60))
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    labels = rng.integers(0, num_classes, n)
    logits = np.round(rng.normal(size=(n, num_classes)), 1)  # rounding makes ties
    images = logits / 100.0
    ranked = ranked_classes(images, np.eye(num_classes))
    names = [f"class{i}" for i in range(num_classes)]
    metrics = classification_metrics(labels, ranked, names)
    predicted = ranked[:, 0]
    assert metrics["top1"] == pytest.approx(100 * accuracy_score(labels, predicted))
    # sklearn breaks ties its own way, so compare on tie-free scores built from our ranking
    tie_free = np.empty_like(logits)
    np.put_along_axis(tie_free, ranked, -np.arange(num_classes, dtype=float)[None, :].repeat(n, 0), axis=1)
    assert metrics["top5"] == pytest.approx(
        100 * top_k_accuracy_score(labels, tie_free, k=5, labels=range(num_classes))
    )
    present = sorted(set(labels.tolist()))
    assert metrics["mean_per_class_recall"] == pytest.approx(
        100 * np.mean([np.mean(predicted[labels == c] == c) for c in present])
    )
    if set(predicted.tolist()) <= set(present) and len(present) > 1:
        assert metrics["mean_per_class_recall"] == pytest.approx(100 * balanced_accuracy_score(labels, predicted))
    precision, recall, f1, support = precision_recall_fscore_support(
        labels, predicted, labels=range(num_classes), zero_division=0
    )
    for i, name in enumerate(names):
        per_class = metrics["per_class"][name]
        assert per_class["precision"] == pytest.approx(100 * precision[i])
        assert per_class["f1"] == pytest.approx(100 * f1[i])
        assert per_class["support"] == support[i]
        assert per_class["recall"] == (pytest.approx(100 * recall[i]) if support[i] else None)
    assert metrics["confusion_matrix"] == confusion_matrix(labels, predicted, labels=range(num_classes)).tolist()
    # WILDS's F1-macro (iWildCam's main metric): over the classes that have images.
    assert metrics["macro_f1"] == pytest.approx(
        100 * f1_score(labels, predicted, average="macro", labels=np.unique(labels), zero_division=0)
    )


@pytest.mark.parametrize("num_classes", [2, 4, 5])
def test_top5_is_undefined_without_more_than_five_classes(num_classes):
    labels = np.zeros(3, dtype=np.int64)
    ranked = np.tile(np.arange(num_classes), (3, 1))
    metrics = classification_metrics(labels, ranked, [str(i) for i in range(num_classes)])
    assert metrics["top5"] is None
    assert metrics["notes"] == [f"top5 is undefined with {num_classes} classes"]
    assert metrics["top1"] == 100.0


def test_bad_labels_and_classes_are_named(tmp_path):
    (tmp_path / "classes.json").write_text(json.dumps({"classnames": ["a", "a"], "templates": ["{}"]}))
    with pytest.raises(ClipevalError, match=r"classes\.json: classnames repeat"):
        load_classes(tmp_path / "classes.json")
    (tmp_path / "classes.json").write_text(json.dumps({"classnames": ["a", "b"], "templates": ["a photo"]}))
    with pytest.raises(
        ClipevalError, match=r"classes\.json: templates must be a non-empty list of strings each holding \{\}"
    ):
        load_classes(tmp_path / "classes.json")
    (tmp_path / "labels.jsonl").write_text('{"image_id": 1, "label": 0}\n{"image_id": 2, "label": 2}\n')
    with pytest.raises(ClipevalError, match=r"labels\.jsonl:2: image_id 2 has label 2, not a class index below 2"):
        load_labels(tmp_path / "labels.jsonl", 2)
    with pytest.raises(ClipevalError, match=r"feats\.jsonl: image_id 3 has no label"):
        align_labels(np.array([1, 3]), np.array([1]), np.array([0]), "feats.jsonl")
    with pytest.raises(ClipevalError, match=r"feats\.jsonl: no feature for labelled image_id 4"):
        align_labels(np.array([1]), np.array([1, 4]), np.array([0, 1]), "feats.jsonl")


@pytest.mark.slow
def test_cli_chain(tmp_path, tiny_checkpoint):
    from conftest import run_cli

    steps = [
        ("prepare", "shapes", "--num-images", 24, "--seed", 3, "--out", tmp_path / "data"),
        (
            "extract-features",
            "--arch",
            "clipeval-tiny",
            "--pretrained",
            tiny_checkpoint,
            "--images",
            tmp_path / "data/images.lmdb",
            "--image-output",
            tmp_path / "images.jsonl",
            "--num-workers",
            0,
            "--device",
            "cpu",
        ),
        (
            "encode-classes",
            "--arch",
            "clipeval-tiny",
            "--pretrained",
            tiny_checkpoint,
            "--classes",
            tmp_path / "data/classes.json",
            "--output",
            tmp_path / "classes.jsonl",
            "--device",
            "cpu",
        ),
        (
            "score-classification",
            "--image-feats",
            tmp_path / "images.jsonl",
            "--class-feats",
            tmp_path / "classes.jsonl",
            "--labels",
            tmp_path / "data/labels.jsonl",
            "--classes",
            tmp_path / "data/classes.json",
            "--output",
            tmp_path / "classification.json",
        ),
    ]
    for step in steps:
        result = run_cli(*step)
        assert result.returncode == 0, (step[0], result.stderr)
    metrics = json.loads((tmp_path / "classification.json").read_text())
    assert metrics["task"] == "classification" and metrics["counts"] == {
        "images": 24,
        "classes": 6,
        "classes_with_images": 6,
    }
    classes = [json.loads(line) for line in open(tmp_path / "classes.jsonl")]
    assert [c["class_id"] for c in classes] == list(range(6))
    assert np.allclose(np.linalg.norm([c["feature"] for c in classes], axis=1), 1, atol=1e-5)
    assert sum(map(sum, metrics["confusion_matrix"])) == 24


def test_classification_intervals_and_paired_comparison():
    from clipeval.classification.metrics import score_classification
    from clipeval.comparison import compare_models

    rng = np.random.default_rng(0)
    classes = rng.normal(size=(8, 16)).astype(np.float32)
    labels = rng.integers(0, 8, size=400)
    image_ids = np.arange(400) + 1000
    names = [f"class {i}" for i in range(8)]
    sharp = (classes[labels] + rng.normal(scale=1.0, size=(400, 16))).astype(np.float32)
    blurred = (sharp + rng.normal(scale=1.5, size=(400, 16))).astype(np.float32)
    first, first_ranks = score_classification(image_ids, sharp, classes, labels, names, 300, 0)
    second, second_ranks = score_classification(image_ids, blurred, classes, labels, names, 300, 0)
    for metrics in (first, second):
        for name in ("top1", "top5", "mean_per_class_recall", "macro_f1"):
            low, high = metrics["intervals"][name]
            assert low <= metrics[name] <= high
    assert first_ranks["ranks"].count(1) == round(first["top1"] * 4)
    comparison = compare_models(("sharp", "blurred"), first_ranks, second_ranks, "b.json", 300, 0)
    assert comparison["difference"]["top1"] == pytest.approx(first["top1"] - second["top1"])
    low, high = comparison["intervals"]["top1"]
    assert 0 < low <= comparison["difference"]["top1"] <= high
    assert comparison["values"]["blurred"]["macro_f1"] == pytest.approx(second["macro_f1"])
    assert comparison["difference"]["macro_f1"] == pytest.approx(first["macro_f1"] - second["macro_f1"])
    low, high = comparison["intervals"]["macro_f1"]
    assert 0 < low <= comparison["difference"]["macro_f1"] <= high


def test_records_scored_before_they_kept_predictions_pair_without_macro_f1():
    from clipeval.classification.metrics import score_classification
    from clipeval.comparison import compare_models

    rng = np.random.default_rng(1)
    classes = rng.normal(size=(4, 8)).astype(np.float32)
    labels = rng.integers(0, 4, size=50)
    images = (classes[labels] + rng.normal(size=(50, 8))).astype(np.float32)
    _, new = score_classification(np.arange(50), images, classes, labels, list("abcd"))
    _, second = score_classification(np.arange(50), images[::-1].copy(), classes, labels, list("abcd"))
    old = {key: value for key, value in second.items() if key != "predicted"}
    both_new = compare_models(("a", "b"), new, second, "b.json")
    assert set(both_new["difference"]) == {"top1", "top5", "mean_per_class_recall", "macro_f1"}
    comparison = compare_models(("a", "b"), new, old, "b.json")
    assert set(comparison["difference"]) == {"top1", "top5", "mean_per_class_recall"}
    assert comparison["difference"]["top1"] == both_new["difference"]["top1"]
