"""DataComp's FairFace and UTKFace layout (its webdataset exports): every head's class names and templates in
one file, each line prefixed by its head, and each sample's `npy` [age, gender, race, race_binary] in place of a
class. `objective:` scores one head, by group, against a hand count."""

import io
import json
import tarfile

import numpy as np
import pytest
from conftest import run_cli
from sources import shapes

from clipeval.features.feature_files import write_features

RACES = ["black", "white", "indian", "latino", "middle eastern", "southeast asian", "east asian"]
CLASSNAMES = [
    *(f"race:{race}" for race in RACES),
    "gender:man",
    "gender:woman",
    *(f"age:{age}" for age in ("0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "70+")),
    "toxic:animal",
    "toxic:criminal",
]
TEMPLATES = ["race:a photo of a {c} person.", "gender:a photo of a {c}.", "age:a photo of a person aged {c}."]
IMAGES = 12
FIELDS = ["age", "gender", "race", "race_binary"]


def person(index):
    """[age, gender, race, race_binary] of sample `index`: white (race 1) is race_binary 0, as DataComp's."""
    race = index % 7
    return [index % 9, index % 2, race, int(race != 1)]


def write_fairface(root, npy=person):
    split = root / "test"
    split.mkdir(parents=True)
    with tarfile.open(split / "0.tar", "w", format=tarfile.USTAR_FORMAT) as archive:
        for index, (_, raw, _, _) in enumerate(shapes(IMAGES, 23)):
            vector = io.BytesIO()
            np.save(vector, np.array(npy(index), dtype=np.int64))
            for extension, data in (("jpg", raw), ("npy", vector.getvalue())):
                info = tarfile.TarInfo(f"s{index:07d}.{extension}")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    (split / "nshards.txt").write_text("1\n")
    (root / "classnames.txt").write_text("".join(f"{line}\n" for line in CLASSNAMES))
    (root / "zeroshot_classification_templates.txt").write_text("".join(f"{line}\n" for line in TEMPLATES))
    return root


def prepare(root, out, *options):
    return run_cli("prepare", "wds_classification", "--export", root, "--out", out, *options)


@pytest.mark.slow
def test_a_head_takes_its_prefixed_classes_and_templates_and_its_npy_column_as_the_class(tmp_path):
    root = write_fairface(tmp_path / "fairface")
    result = prepare(root, tmp_path / "gender", "--groups", *FIELDS, "--objective", "gender")
    assert result.returncode == 0, result.stderr
    classes = json.loads((tmp_path / "gender/classes.json").read_text())
    assert classes == {"classnames": ["man", "woman"], "templates": ["a photo of a {}."]}
    rows = [json.loads(line) for line in (tmp_path / "gender/labels.jsonl").read_text().splitlines()]
    assert rows == [
        {"image_id": i, "label": person(i)[1], "groups": dict(zip(FIELDS, person(i)))} for i in range(IMAGES)
    ]
    assert prepare(root, tmp_path / "race", "--groups", *FIELDS, "--objective", "race").returncode == 0
    assert json.loads((tmp_path / "race/classes.json").read_text())["classnames"] == RACES


@pytest.mark.slow
def test_a_heads_accuracy_by_race_binary_is_the_hand_count(tmp_path):
    root = write_fairface(tmp_path / "fairface")
    out = tmp_path / "gender"
    assert prepare(root, out, "--groups", *FIELDS, "--objective", "gender").returncode == 0
    # The model calls every third person a woman, whoever they are.
    predicted = [1 if index % 3 == 0 else 0 for index in range(IMAGES)]
    write_features(tmp_path / "images.jsonl", "image_id", np.arange(IMAGES), np.eye(2)[predicted])
    write_features(tmp_path / "classes.jsonl", "class_id", np.arange(2), np.eye(2))
    result = run_cli(
        "score-classification", "--image-feats", tmp_path / "images.jsonl", "--class-feats",
        tmp_path / "classes.jsonl", "--labels", out / "labels.jsonl", "--classes", out / "classes.json",
        "--output", tmp_path / "gender.json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    scores = json.loads((tmp_path / "gender.json").read_text())
    right = {0: [], 1: []}
    for index in range(IMAGES):
        right[person(index)[3]].append(predicted[index] == person(index)[1])
    by_hand = {str(group): 100 * sum(hits) / len(hits) for group, hits in right.items()}
    assert {group: values["top1"] for group, values in scores["by_group"]["race_binary"].items()} == pytest.approx(
        by_hand
    )
    least = min(sorted(by_hand), key=by_hand.get)
    assert scores["worst_group"]["race_binary"]["top1"] == pytest.approx(by_hand[least])
    assert scores["worst_group"]["race_binary"]["top1_group"] == least
    assert scores["worst_group"]["race_binary"]["top5"] is None  # two classes


@pytest.mark.parametrize(
    "options, npy, message",
    [
        (
            ("--objective", "gender"),
            person,
            "objective: 'gender' is the column of each sample's .npy that holds its class: name the columns in groups"
            " (FairFace, UTKFace: [age, gender, race, race_binary])",
        ),
        (
            ("--groups", *FIELDS[:2], "toxic", "race_binary", "--objective", "toxic"),
            person,
            "{r}/zeroshot_classification_templates.txt: no templates prefixed 'toxic:'",
        ),
        (
            ("--groups", "age", "gender", "ethnicity", "race_binary", "--objective", "ethnicity"),
            person,
            "{r}/classnames.txt: no class names prefixed 'ethnicity:'",
        ),
        (
            ("--groups", *FIELDS, "--objective", "gender"),
            lambda index: [0, 2, 1, 0] if index == 5 else person(index),
            "{r}/test/0.tar: sample s0000005: .npy's gender is 2, not an index below 2 (the class names prefixed"
            " 'gender:' in {r}/classnames.txt)",
        ),
    ],
)
def test_a_head_that_cannot_be_read_is_one_line_naming_the_setting_or_file(tmp_path, options, npy, message):
    root = write_fairface(tmp_path / "fairface", npy)
    result = prepare(root, tmp_path / "out", *options)
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    assert result.stderr == f"clipeval: error: {message.format(r=root)}\n"
