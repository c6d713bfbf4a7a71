"""XTD10's and Multi30k's files: image names and captions aligned line by line, each language a dataset that
numbers the images alike; every line counts, and a line that does not fit is one line naming it."""

import pytest
from conftest import run_cli
from sources import write_aligned_lines

from clipeval.data.dataset import open_dataset


def prepare(names, captions, images, out):
    return run_cli(
        "prepare", "aligned_lines", "--image-names", names, "--captions", captions, "--images", images, "--out", out
    )


def test_line_i_describes_the_image_on_line_i(tmp_path):
    names, captions, images = write_aligned_lines(tmp_path / "source")
    result = prepare(names, captions, images, tmp_path / "d")
    assert result.returncode == 0, result.stderr
    store, texts = open_dataset(tmp_path / "d")
    lines = captions.read_text().splitlines()
    assert store.image_ids().tolist() == list(range(len(lines)))
    assert [(int(ids[0]), text) for ids, text in zip(texts.image_ids, texts.texts)] == list(enumerate(lines))
    assert store.encoded_bytes(2) == (images / names.read_text().splitlines()[2]).read_bytes()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda n, c: c.write_text(c.read_text() + "one caption too many\n"), "{c}: 7 captions for the 6 images of {n}"
         " (line i describes the image on line i)"),
        (lambda n, c: c.write_text(c.read_text().replace("\n", "\n\n", 1)), "{c}:2: blank line (each line is the"
         " caption of one image)"),
        (lambda n, c: n.write_text(n.read_text().replace("000000001139", "000000000139")), "{n}:2: image"
         " COCO_val2014_000000000139.jpg listed again (first on line 1)"),
        (lambda n, c: n.write_text(n.read_text().replace("000000002139", "gone")), "{n}:3: image file {i}/COCO_val2014_gone.jpg"
         " not found"),
        (lambda n, c: c.write_bytes(b"\xff\xfe\n" + c.read_bytes()), "{c}:1: not UTF-8 text"),
    ],
)  # fmt: skip
def test_a_line_that_does_not_fit_is_named_and_nothing_is_written(tmp_path, change, message):
    names, captions, images = write_aligned_lines(tmp_path / "source")
    change(names, captions)
    result = prepare(names, captions, images, tmp_path / "d")
    assert result.returncode == 1 and not (tmp_path / "d").exists()
    assert result.stderr == f"clipeval: error: {message.format(n=names, c=captions, i=images)}\n"


def test_a_byte_order_mark_an_editor_put_first_is_not_part_of_the_first_name_or_caption(tmp_path):
    """Left in, it made the first image 'not found' though its name looked right."""
    names, captions, images = write_aligned_lines(tmp_path / "source")
    for path in (names, captions):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = prepare(names, captions, images, tmp_path / "d")
    assert result.returncode == 0, result.stderr
    _, texts = open_dataset(tmp_path / "d")
    assert texts.texts[0] == captions.read_text(encoding="utf-8-sig").splitlines()[0]
