"""Zero-shot classification by group (classification/groups.py), from a webdataset export whose samples carry
DataComp's `npy` of group fields: each group's top-1 and top-5 and the worst group's, against a hand count."""

import io
import json

import numpy as np
import pytest
from conftest import run_cli
from sources import write_wds_export
from test_webdataset import rewrite_member

from clipeval.classification.groups import group_metrics, load_groups
from clipeval.errors import ClipevalError
from clipeval.features.feature_files import write_features
from clipeval.reporting.summary import render_markdown, worst_group_rows

CLASSES = 6  # the shapes' classes (data/sources/shapes.py)
IMAGES = 10


def income(index):
    return index % 3


def region(index):
    return 7 if index < 4 else 9


def prepared(tmp_path):
    root = write_wds_export(
        tmp_path / "export", kind="classification", num_images=IMAGES, groups=lambda i: [income(i), region(i)]
    )
    out = tmp_path / "prepared"
    result = run_cli("prepare", "wds_classification", "--export", root, "--groups", "income_ds", "region", "--out", out)
    assert result.returncode == 0, result.stderr
    return root, out


def test_each_samples_groups_reach_its_label_row(tmp_path):
    _, out = prepared(tmp_path)
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert [row["groups"] for row in rows] == [{"income_ds": income(i), "region": region(i)} for i in range(IMAGES)]
    assert json.loads((out / "meta.json").read_text())["source"]["groups"] == ["income_ds", "region"]


def test_scores_by_group_and_the_worst_group_are_the_hand_counts(tmp_path):
    _, out = prepared(tmp_path)
    labels = [json.loads(line)["label"] for line in (out / "labels.jsonl").read_text().splitlines()]
    # Each image's feature is one class's axis: the model predicts that class; the others follow by index. Every
    # other guess is wrong, the last class or the first, whichever puts the true class furthest back.
    predicted = [label if i % 2 else (0 if label == CLASSES - 1 else CLASSES - 1) for i, label in enumerate(labels)]
    write_features(tmp_path / "images.jsonl", "image_id", np.arange(IMAGES), np.eye(CLASSES)[predicted])
    write_features(tmp_path / "classes.jsonl", "class_id", np.arange(CLASSES), np.eye(CLASSES))
    output = tmp_path / "classification.json"
    result = run_cli(
        "score-classification", "--image-feats", tmp_path / "images.jsonl", "--class-feats",
        tmp_path / "classes.jsonl", "--labels", out / "labels.jsonl", "--classes", out / "classes.json",
        "--bootstrap", "0", "--output", output,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr

    def rank(label, guess):  # the true class's place: the guess first, then the other classes by index
        return 1 if guess == label else label + (1 if guess < label else 2)

    ranks = [rank(label, guess) for label, guess in zip(labels, predicted)]
    expected, worst = {}, {}
    for field, of in (("income_ds", income), ("region", region)):
        members = {}
        for index, place in enumerate(ranks):
            members.setdefault(str(of(index)), []).append(place)
        expected[field] = {
            group: {
                "images": len(places),
                "top1": 100 * sum(p == 1 for p in places) / len(places),
                "top5": 100 * sum(p <= 5 for p in places) / len(places),
            }
            for group, places in sorted(members.items())
        }
        worst[field] = {k: min(group[k] for group in expected[field].values()) for k in ("top1", "top5")}
    scores = json.loads(output.read_text())
    assert flat(scores["by_group"]) == pytest.approx(flat(expected))
    assert flat(scores["worst_group"]) == pytest.approx(flat(worst))
    assert {number for key, number in flat(worst).items() if key[1] == "top5"} != {100}  # top-5 misses too

    summary = render_markdown([], [], [], worst_groups=worst_group_rows("tiny", "streets", scores))
    table = summary.split("### Classification by group", 1)[1]
    assert "| model | dataset | field | groups | top1 | top5 |" in table
    assert f"| tiny | streets | income_ds | 3 | {worst['income_ds']['top1']:.2f} |" in table


def flat(nested, prefix=()):
    """{(key, …): number} of a nested mapping, for pytest.approx."""
    if not isinstance(nested, dict):
        return {prefix: nested}
    return {key: value for name, item in nested.items() for key, value in flat(item, (*prefix, name)).items()}


def test_top5_by_group_is_undefined_with_five_classes_or_fewer():
    metrics = group_metrics(np.array([1, 2, 1]), {"region": np.array([0, 0, 1])}, num_classes=5)
    assert metrics["by_group"]["region"] == {
        "0": {"images": 2, "top1": 50.0, "top5": None},
        "1": {"images": 1, "top1": 100.0, "top5": None},
    }
    assert metrics["worst_group"] == {"region": {"top1": 50.0, "top5": None}}


def write_labels(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [{"image_id": 0, "label": 0, "groups": {"region": 1}}, {"image_id": 1, "label": 0}],
            "{path}:2: image_id 1 has no groups (a field: integer mapping), as {path}:1 has",
        ),
        (
            [{"image_id": 0, "label": 0, "groups": {"region": 1}}, {"image_id": 1, "label": 0, "groups": {"x": 1}}],
            "{path}:2: groups of the fields ['x'], not ['region'] as on {path}:1",
        ),
        (
            [{"image_id": 0, "label": 0, "groups": {"region": "Africa"}}],
            "{path}:1: group region is 'Africa', not an integer",
        ),
    ],
)
def test_labels_whose_groups_disagree_are_one_error_naming_the_line(tmp_path, rows, message):
    path = tmp_path / "labels.jsonl"
    write_labels(path, rows)
    with pytest.raises(ClipevalError) as error:
        load_groups(path, np.array([row["image_id"] for row in rows]))
    assert str(error.value) == message.format(path=path)


def test_labels_without_groups_have_none(tmp_path):
    write_labels(tmp_path / "labels.jsonl", [{"image_id": 0, "label": 0}])
    assert load_groups(tmp_path / "labels.jsonl", np.array([0])) is None


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "content, message",
    [
        (npy(np.array([1, 2, 3])), ".npy holds int64 of shape (3,), not 2 integers, one per group field"),
        (npy(np.array([0.5, 1.0])), ".npy holds float64 of shape (2,), not 2 integers, one per group field"),
        (npy(np.array([{"code": 1}, 2], dtype=object)), ".npy is not a numpy array of numbers (ValueError)"),
        (None, "has no .npy"),
    ],
)
def test_a_samples_groups_that_are_not_its_fields_integers_are_refused(tmp_path, content, message):
    root = write_wds_export(tmp_path / "export", kind="classification", num_images=3, groups=lambda i: [i, 0])
    rewrite_member(root / "test/0.tar", "s0000001.npy", content)
    result = run_cli(
        "prepare", "wds_classification", "--export", root, "--groups", "income_ds", "region", "--out", tmp_path / "d"
    )
    assert result.returncode == 1 and not (tmp_path / "d").exists()
    assert result.stderr.startswith(f"clipeval: error: {root / 'test/0.tar'}: sample s0000001: ")
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
