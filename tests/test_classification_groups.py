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
    # third guess is wrong, the last class or the first, whichever puts the true class furthest back.
    predicted = [label if i % 3 else (0 if label == CLASSES - 1 else CLASSES - 1) for i, label in enumerate(labels)]
    # The feature file lists the images in another order than the labels: groups follow the image ids.
    order = np.random.default_rng(0).permutation(IMAGES)
    write_features(tmp_path / "images.jsonl", "image_id", order, np.eye(CLASSES)[np.array(predicted)[order]])
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
        worst[field] = {}
        for k in ("top1", "top5"):
            least = min(sorted(expected[field], key=int), key=lambda group: expected[field][group][k])
            worst[field] |= {k: expected[field][least][k], f"{k}_group": least}
    scores = json.loads(output.read_text())
    assert flat(scores["by_group"]) == pytest.approx(flat(expected))
    assert flat(scores["worst_group"]) == pytest.approx(flat(worst))
    # The groups differ, so that the least is one of them: top-1 in both fields, top-5 in one.
    assert all(len({group["top1"] for group in expected[field].values()}) > 1 for field in expected)
    assert any(len({group["top5"] for group in expected[field].values()}) > 1 for field in expected)

    summary = render_markdown([], [], [], worst_groups=worst_group_rows("tiny", "streets", scores))
    table = summary.split("### Classification by group", 1)[1]
    assert "| model | dataset | field | groups | top1 | top1_group | top5 | top5_group |" in table
    for field, count in (("income_ds", 3), ("region", 2)):
        least = worst[field]
        row = f"| tiny | streets | {field} | {count} | {least['top1']:.2f} | {least['top1_group']} | {least['top5']:.2f} |"
        assert row in table


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
    assert metrics["worst_group"] == {"region": {"top1": 50.0, "top1_group": "0", "top5": None, "top5_group": None}}


def write_labels(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [{"image_id": 0, "label": 0, "groups": {"region": 1}}, {"image_id": 1, "label": 0}],
            "{path}:2: image_id 1 has groups None, not a mapping of fields to integers, as {path}:1 has",
        ),
        (
            [{"image_id": 0, "label": 0, "groups": {"region": 1}}, {"image_id": 1, "label": 0, "groups": {"x": 1}}],
            "{path}:2: groups of the fields ['x'], not ['region'] as on {path}:1",
        ),
        (
            [{"image_id": 0, "label": 0, "groups": {"region": "Africa"}}],
            "{path}:1: group region is 'Africa', not an integer",
        ),
        (
            [{"image_id": 0, "label": 0, "groups": {}}],
            "{path}:1: image_id 0 has groups {{}}, not a mapping of fields to integers",
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


def npz():
    buffer = io.BytesIO()
    np.savez(buffer, groups=np.array([1, 2]))
    return buffer.getvalue()


def huge():
    """A header that declares a terabyte of integers, over 16 bytes of them."""
    header = npy(np.array([1, 2])).replace(b"(2,)", b"(1099511627776,)")
    return header[: len(header) - 16] + header[-16:]


@pytest.mark.parametrize(
    "content, message",
    [
        (npy(np.array([1, 2, 3])), ".npy holds int64 of shape (3,), not 2 integers, one per group field"),
        (npy(np.array([0.5, 1.0])), ".npy holds [0.5, 1.0], not 2 integers, one per group field"),
        (npy(np.array([{"code": 1}, 2], dtype=object)), ".npy holds object of shape (2,), not 2 integers"),
        (npz(), ".npy is not a numpy array file (the magic string is not correct"),
        (huge(), ".npy holds int64 of shape (1099511627776,), not 2 integers"),
        (npy(np.array([1, 2]))[:-8], ".npy has 8 bytes of data where its header declares (2,) int64"),
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


def test_whole_numbers_stored_as_floats_are_groups(tmp_path):
    root = write_wds_export(tmp_path / "export", kind="classification", num_images=3, groups=lambda i: [i, 0])
    rewrite_member(root / "test/0.tar", "s0000001.npy", npy(np.array([4.0, 2.0])))
    result = run_cli("prepare", "wds_classification", "--export", root, "--groups", "a", "b", "--out", tmp_path / "d")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "d/labels.jsonl").read_text().splitlines()]
    assert [row["groups"] for row in rows] == [{"a": 0, "b": 0}, {"a": 4, "b": 2}, {"a": 2, "b": 0}]


def test_an_export_whose_groups_are_not_named_is_imported_with_a_note(tmp_path):
    root = write_wds_export(tmp_path / "export", kind="classification", num_images=3, groups=lambda i: [i, 0])
    result = run_cli("prepare", "wds_classification", "--export", root, "--out", tmp_path / "d")
    assert result.returncode == 0
    assert result.stderr == (
        f"note: {root / 'test/0.tar'}: sample s0000000 (and maybe others) has a .npy, where DataComp's exports keep"
        " a sample's groups (fairness sets) or metadata (WILDS); it is not read: `groups:` names its columns to"
        " score by group\n"
    )
    assert "groups" not in (tmp_path / "d/labels.jsonl").read_text()


def test_groups_csv_lists_every_group_and_marks_each_fields_worst(tmp_path):
    from clipeval.reporting.summary import summarize

    by_group = {"income_ds": {"0": {"images": 3, "top1": 50.0, "top5": 90.0}, "1": {"images": 2, "top1": 40.0,
                "top5": 95.0}}}  # fmt: skip
    worst = {"income_ds": {"top1": 40.0, "top1_group": "1", "top5": 90.0, "top5_group": "0"}}
    scores = {"task": "classification", "top1": 46.0, "top5": 92.0, "mean_per_class_recall": 45.0}
    scores |= {"counts": {"images": 5, "classes": 6}, "by_group": by_group, "worst_group": worst}
    (tmp_path / "street.json").write_text(json.dumps(scores))
    outputs = {name: tmp_path / f"{name}.out" for name in ("csv", "markdown", "averages", "comparisons", "series")}
    summarize([("tiny", "streets", tmp_path / "street.json")], [], {**outputs, "groups": tmp_path / "groups.csv"})
    assert (tmp_path / "groups.csv").read_text().splitlines() == [
        "model,dataset,field,group,images,top1,top5,worst_top1,worst_top5",
        "tiny,streets,income_ds,0,3,50.0,90.0,no,yes",
        "tiny,streets,income_ds,1,2,40.0,95.0,yes,no",
    ]
