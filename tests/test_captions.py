import pytest

from clipeval.data.captions import check_references, load_captions
from clipeval.errors import ClipevalError


def write(tmp_path, text):
    path = tmp_path / "texts.jsonl"
    path.write_text(text)
    return path


def test_loads_captions_with_several_images(tmp_path):
    path = write(
        tmp_path,
        '{"text_id": 12, "text": "a red circle", "image_ids": [3]}\n'
        '{"text_id": 4, "text": "two shapes", "image_ids": [5, 3, 5]}\n',
    )
    captions = load_captions(path)
    assert captions.text_ids.tolist() == [12, 4]
    assert captions.texts == ["a red circle", "two shapes"]
    assert [ids.tolist() for ids in captions.image_ids] == [[3], [3, 5]]
    assert captions.referenced_image_ids().tolist() == [3, 5]


@pytest.mark.parametrize(
    "line, message",
    [
        (
            '{"text_id": "7", "text": "x", "image_ids": [1]}',
            r"texts\.jsonl:2: text_id must be a non-negative integer, got '7'",
        ),
        (
            '{"text_id": -1, "text": "x", "image_ids": [1]}',
            r"texts\.jsonl:2: text_id must be a non-negative integer, got -1",
        ),
        ('{"text": "x", "image_ids": [1]}', r"texts\.jsonl:2: text_id must be a non-negative integer, got None"),
        (
            '{"text_id": 1, "text": "again", "image_ids": [1]}',
            r"texts\.jsonl:2: duplicate text_id 1 \(first on line 1\)",
        ),
        ('{"text_id": 2, "text": "  ", "image_ids": [1]}', r"texts\.jsonl:2: text_id 2 has an empty or missing text"),
        ('{"text_id": 2, "text": "x", "image_ids": []}', r"texts\.jsonl:2: text_id 2 needs a non-empty image_ids list"),
        (
            '{"text_id": 2, "text": "x", "image_ids": [1.5]}',
            r"texts\.jsonl:2: text_id 2: image_ids entry must be a non-negative integer",
        ),
        ('{"text_id": 2, "text": "x", "image_ids": [1]', r"texts\.jsonl:2: malformed JSON line"),
    ],
)
def test_bad_lines_are_named(tmp_path, line, message):
    path = write(tmp_path, '{"text_id": 1, "text": "ok", "image_ids": [1]}\n' + line + "\n")
    with pytest.raises(ClipevalError, match=message):
        load_captions(path)


def test_empty_file(tmp_path):
    with pytest.raises(ClipevalError, match="no captions"):
        load_captions(write(tmp_path, ""))


def test_unknown_image_reference(tmp_path):
    import numpy as np

    captions = load_captions(write(tmp_path, '{"text_id": 9, "text": "x", "image_ids": [1, 8]}\n'))
    with pytest.raises(ClipevalError, match="text_id 9 points to unknown image_id 8"):
        check_references(captions, np.array([1, 2]), tmp_path / "texts.jsonl")
