"""Multi-label classification (classification/multilabel.py): Pascal VOC 2007's layout in CLIP_benchmark's
webdataset export, each class's average precision against scikit-learn's average_precision_score, mAP through the
command, its paired comparison, and the places that refuse a multi-label set."""

import json

import numpy as np
import pytest
from conftest import run_cli
from sklearn.metrics import average_precision_score
from sources import CLASSNAMES, write_wds_export
from test_webdataset import rewrite_member

from clipeval.classification.metrics import load_labels
from clipeval.classification.multilabel import average_precisions, class_places, load_multilabels
from clipeval.comparison import compare_models
from clipeval.errors import ClipevalError
from clipeval.features.feature_files import write_features
from clipeval.reporting.summary import headline_lines, summary_row
from clipeval.tasks import main_metric

CLASSES = len(CLASSNAMES)
IMAGES = 10


def held(index):
    """The classes sample `index` holds: one or two, and class 5 by none."""
    return sorted({index % 5, (2 * index + 1) % 5}) if index % 4 else [index % 5]


def prepared(tmp_path):
    root = write_wds_export(tmp_path / "export", kind="multilabel", num_images=IMAGES, groups=held)
    out = tmp_path / "prepared"
    result = run_cli("prepare", "wds_classification", "--export", root, "--out", out)
    assert result.returncode == 0, result.stderr
    return root, out


def test_each_samples_classes_reach_its_label_row(tmp_path):
    _, out = prepared(tmp_path)
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert rows == [{"image_id": i, "labels": held(i)} for i in range(IMAGES)]
    ids, positives = load_multilabels(out / "labels.jsonl", CLASSES)
    assert ids.tolist() == list(range(IMAGES))
    assert [np.flatnonzero(row).tolist() for row in positives] == [held(i) for i in range(IMAGES)]


@pytest.mark.parametrize("seed", range(6))
def test_average_precision_is_scikit_learns_without_ties(seed):
    rng = np.random.default_rng(seed)
    images, classes = int(rng.integers(5, 60)), int(rng.integers(2, 8))
    features = rng.normal(size=(images, 16))
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    class_features = rng.normal(size=(classes, 16))
    class_features /= np.linalg.norm(class_features, axis=1, keepdims=True)
    positives = rng.random((images, classes)) < 0.3
    positives[0, :] = True  # every class has an image
    found = average_precisions(class_places(features, class_features, np.arange(images)), positives)
    logits = features @ class_features.T
    expected = [100.0 * average_precision_score(positives[:, c], logits[:, c]) for c in range(classes)]
    assert found == pytest.approx(expected, abs=1e-9)


def test_tied_images_are_placed_by_image_id_and_a_class_without_images_has_no_precision():
    # Images 0 and 1 tie for class 0; image 2 is ahead. For class 0 the order is 2, 0, 1: the positives 1 and 2
    # sit at places 3 and 1, so AP = (1/1 + 2/3) / 2. Class 1 holds no image.
    features = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    class_features = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    places = class_places(features, class_features, np.arange(3))
    assert places[:, 0].tolist() == [2, 3, 1] and places[:, 1].tolist() == [1, 2, 3]
    # Ties go by image id, not by the rows' order: the same images listed the other way round.
    backwards = class_places(features[::-1], class_features, np.arange(3)[::-1])
    assert backwards[::-1].tolist() == places.tolist()
    positives = np.array([[False, False], [True, False], [True, False]])
    assert average_precisions(places, positives) == [pytest.approx(100 * (1 + 2 / 3) / 2), None]


def scored(tmp_path, out, features, name, *options):
    write_features(tmp_path / f"{name}.jsonl", "image_id", np.arange(IMAGES), features)
    write_features(tmp_path / "classes.jsonl", "class_id", np.arange(CLASSES), np.eye(CLASSES, 8))
    result = run_cli(
        "score-classification", "--image-feats", tmp_path / f"{name}.jsonl", "--class-feats",
        tmp_path / "classes.jsonl", "--labels", out / "labels.jsonl", "--classes", out / "classes.json",
        "--ranks-output", tmp_path / f"{name}.ranks.json", "--output", tmp_path / f"{name}.json", *options,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / f"{name}.json").read_text()), json.loads(
        (tmp_path / f"{name}.ranks.json").read_text()
    )


def random_features(seed):
    features = np.random.default_rng(seed).normal(size=(IMAGES, 8)).astype(np.float32)
    return features / np.linalg.norm(features, axis=1, keepdims=True)


def expected_precisions(features):
    positives = np.zeros((IMAGES, CLASSES), dtype=bool)
    for index in range(IMAGES):
        positives[index, held(index)] = True
    logits = features.astype(np.float64) @ np.eye(CLASSES, 8).T
    return [
        100.0 * average_precision_score(positives[:, c], logits[:, c]) if positives[:, c].any() else None
        for c in range(CLASSES)
    ]


@pytest.mark.slow
def test_the_command_scores_mean_average_precision_over_the_classes_with_images(tmp_path):
    _, out = prepared(tmp_path)
    features = random_features(1)
    metrics, record = scored(tmp_path, out, features, "model", "--bootstrap", "200")
    expected = expected_precisions(features)
    assert [metrics["per_class"][name]["average_precision"] for name in CLASSNAMES] == pytest.approx(expected)
    assert metrics["mean_average_precision"] == pytest.approx(np.mean(expected[:5]))
    assert (metrics["top1"], metrics["top5"], metrics["mean_per_class_recall"]) == (None, None, None)
    assert metrics["counts"] == {"images": IMAGES, "classes": CLASSES, "classes_with_images": 5, "labels": 16}
    assert metrics["notes"][1] == f"no image holds 1 of the classes ({CLASSNAMES[5]}): left out of the mAP"
    low, high = metrics["intervals"]["mean_average_precision"]
    assert low <= metrics["mean_average_precision"] <= high and low < high
    assert record["multilabel"] and record["labels"] == [held(i) for i in range(IMAGES)]
    row = summary_row("m", "voc", metrics)
    assert main_metric("classification", row) == "mean_average_precision"
    assert headline_lines([row])[-5:-2] == [
        "| model | dataset | top-1 | top-5 | mean per-class recall | mAP |",
        "|---|---|---|---|---|---|",
        f"| m | voc | n/a | n/a | n/a | {row['mean_average_precision']:.2f} [{low:.2f}, {high:.2f}] |",
    ]


@pytest.mark.slow
def test_two_models_are_compared_by_their_paired_map(tmp_path, monkeypatch):
    _, out = prepared(tmp_path)
    first, first_record = scored(tmp_path, out, random_features(1), "first")
    second, second_record = scored(tmp_path, out, random_features(2), "second")
    compared = compare_models(("first", "second"), first_record, second_record, "second.ranks.json", 200, 0)
    difference = first["mean_average_precision"] - second["mean_average_precision"]
    assert compared["difference"]["mean_average_precision"] == pytest.approx(difference)
    assert compared["difference"]["top1"] is None
    low, high = compared["intervals"]["mean_average_precision"]
    assert low <= difference <= high
    # The forest plot draws mAP alone, not empty panels for the single-label metrics.
    from clipeval.reporting import figures, forest_plot

    panels = []
    new_figure = figures.new_figure
    monkeypatch.setattr(
        figures, "new_figure", lambda *shape, **options: panels.append(shape[3]) or new_figure(*shape, **options)
    )
    forest_plot.plot_forest("voc", [compared], "classification", tmp_path / "forest.png")
    assert panels == [1]
    single = {**second_record, "multilabel": False, "labels": list(range(IMAGES)), "ranks": [1] * IMAGES}
    with pytest.raises(ClipevalError, match="^single.json: its images or labels differ"):
        compare_models(("first", "single"), first_record, single, "single.json")


def test_what_takes_one_label_an_image_refuses_a_multilabel_set_in_one_line(tmp_path):
    _, out = prepared(tmp_path)
    with pytest.raises(ClipevalError) as refused:
        load_labels(out / "labels.jsonl", CLASSES)
    assert str(refused.value) == (
        f"{out / 'labels.jsonl'}:1: image_id 0 has several labels (a multi-label set, scored by mean average"
        " precision): this takes one label an image"
    )


def test_groups_on_a_multilabel_set_are_refused(tmp_path):
    root = write_wds_export(tmp_path / "export", kind="multilabel", num_images=IMAGES, groups=held)
    result = run_cli("prepare", "wds_classification", "--export", root, "--groups", "income", "--out", tmp_path / "d")
    assert result.returncode == 1 and not (tmp_path / "d").exists()
    assert result.stderr == (
        f"clipeval: error: groups: {root / 'dataset_type.txt'} says a multi-label set, whose .npy holds each"
        " sample's classes, not groups\n"
    )


def test_a_sample_whose_classes_are_not_zeros_and_ones_is_refused_by_name(tmp_path):
    import io

    root = write_wds_export(tmp_path / "export", kind="multilabel", num_images=IMAGES, groups=held)
    vector = io.BytesIO()
    np.save(vector, np.array([0, 2, 0, 0, 0, 1], dtype=np.float32))
    rewrite_member(root / "test/1.tar", "s0000005.npy", vector.getvalue())
    result = run_cli("prepare", "wds_classification", "--export", root, "--out", tmp_path / "d")
    assert result.returncode == 1 and not (tmp_path / "d").exists()
    assert result.stderr == (
        f"clipeval: error: {root / 'test/1.tar'}: sample s0000005: .npy holds [0.0, 2.0, 0.0, 0.0, 0.0, 1.0],"
        f" not {CLASSES} zeros and ones, one per class (classnames.txt)\n"
    )


def test_the_confusion_of_a_multilabel_set_counts_each_held_class_against_a_wrong_top1():
    from clipeval.reporting.failures import held_and_predicted

    # Image 10 holds 0 and 2 and is predicted 2: right for 2, and 0 is not confused with 2. Image 11 holds 0 and
    # 1 and is predicted 3: both its classes are confused with 3. Image 12 holds 1, predicted 1.
    labels = np.array([[1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 0, 0]], dtype=bool)
    ids, held, predicted = held_and_predicted(np.array([10, 11, 12]), labels, np.array([2, 3, 1]))
    assert list(zip(ids.tolist(), held.tolist(), predicted.tolist())) == [
        (10, 2, 2),
        (11, 0, 3),
        (11, 1, 3),
        (12, 1, 1),
    ]


@pytest.mark.slow
def test_the_class_figure_of_a_multilabel_set_shows_average_precision(tmp_path):
    _, out = prepared(tmp_path)
    scored(tmp_path, out, random_features(1), "model")
    figure = tmp_path / "classes.png"
    result = run_cli(
        "plot-dataset", "--dataset", "voc", "--entry", "m", tmp_path / "model.json", "--class-recall", figure
    )
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "classes.csv").read_text().splitlines()
    assert lines[0] == "model,class,average_precision,images" and len(lines) == 1 + CLASSES


def test_a_multilabel_sets_map_is_averaged_apart_from_the_other_sets_top1():
    from clipeval.reporting.summary import average_rows

    rows = [
        {"model": "m", "task": "classification", "top1": 60.0, "mean_average_precision": None},
        {"model": "m", "task": "classification", "top1": 40.0},
        {"model": "m", "task": "classification", "top1": None, "mean_average_precision": 75.0},
    ]
    assert [(row["metric"], row["datasets"], row["average"]) for row in average_rows(rows)] == [
        ("top1", 2, 50.0),
        ("mean_average_precision", 1, 75.0),
    ]


def test_a_record_scored_before_groups_were_kept_is_refused_beside_a_new_one():
    from clipeval.comparison import check_pairable

    new = {"task": "classification", "image_ids": [1], "labels": [0], "num_classes": 2, "groups": {"region": [3]}}
    old = {key: value for key, value in new.items() if key != "groups"}
    with pytest.raises(ClipevalError) as refused:
        check_pairable(new, old, "old-ranks.json")
    assert str(refused.value) == (
        "old-ranks.json: one of the two records has no groups (scored before ranks records kept them): score it again"
    )
