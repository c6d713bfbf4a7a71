"""Crossmodal-3600's files, one language a dataset: every language numbers the images alike, and the first
caption (CLIP_benchmark's choice) or every caption of the language is kept."""

import json

import pytest
from conftest import run_cli
from sources import write_xm3600

from clipeval.data.dataset import open_dataset


def prepare(tmp_path, *options, out="d"):
    annotations, images = write_xm3600(tmp_path / "source")
    return run_cli(
        "prepare", "xm3600", "--annotations", annotations, "--images", images, *options, "--out", tmp_path / out
    )


@pytest.mark.parametrize(
    "language, captions, per_image", [("en", "first", 1), ("en", "all", 2), ("de", "all", 1), ("zh", "first", 1)]
)
def test_one_language_of_every_image_in_line_order(tmp_path, language, captions, per_image):
    result = prepare(tmp_path, "--language", language, "--captions", captions)
    assert result.returncode == 0, result.stderr
    store, texts = open_dataset(tmp_path / "d")
    lines = [json.loads(line) for line in (tmp_path / "source/captions.jsonl").read_text().splitlines()]
    assert store.image_ids().tolist() == list(range(len(lines)))
    expected = [(row, text) for row, line in enumerate(lines) for text in line[language]["caption"][:per_image]]
    assert [(int(ids[0]), text) for ids, text in zip(texts.image_ids, texts.texts)] == expected
    assert texts.text_ids.tolist() == list(range(len(expected)))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda lines: lines[2].pop("de"), "{path}:3: image/key {key2}: no de captions"),
        (
            lambda lines: lines[1].update({"image/key": "gone"}),
            "{path}:2: image/key gone: image file {images}/gone.jpg not found",
        ),
        (lambda lines: lines[0].update({"image/key": 7}), "{path}:1: image/key must be a non-empty string"),
        (
            lambda lines: lines[3]["de"].update(caption=[" "]),
            "{path}:4: image/key {key3}: caption id 3 has an empty caption",
        ),
    ],
)
def test_a_bad_line_is_one_line_naming_it_and_writes_nothing(tmp_path, change, message):
    annotations, images = write_xm3600(tmp_path / "source")
    lines = [json.loads(line) for line in annotations.read_text().splitlines()]
    keys = {f"key{i}": line["image/key"] for i, line in enumerate(lines)}
    change(lines)
    annotations.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    out = tmp_path / "d"
    result = run_cli(
        "prepare", "xm3600", "--annotations", annotations, "--images", images, "--language", "de", "--out", out
    )
    assert result.returncode == 1 and not out.exists()
    assert result.stderr == f"clipeval: error: {message.format(path=annotations, images=images, **keys)}\n"
