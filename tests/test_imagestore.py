import base64
import io

import lmdb
import numpy as np
import pytest
from PIL import Image

from clipeval.data import image_lmdb as imagestore
from clipeval.data.image_lmdb import ImageStore, write_image_store
from clipeval.errors import ClipevalError


def png(colour, size=(8, 8)):
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_layout_is_chinese_clip(tmp_path):
    raw = {3: png("red"), 7: png("blue")}
    write_image_store(tmp_path / "imgs", raw.items())
    env = lmdb.open(str(tmp_path / "imgs"), readonly=True, lock=False)
    with env.begin() as txn:
        assert txn.get(b"num_images") == b"2"
        # Chinese-CLIP decodes values as base64 of the original file bytes
        assert base64.urlsafe_b64decode(txn.get(b"3")) == raw[3]
        assert base64.b64decode(txn.get(b"7")) == raw[7]
    env.close()


def test_reader_returns_ids_bytes_and_rgb_images(tmp_path):
    raw = {10: png("red"), 2: png((0, 255, 0))}
    write_image_store(tmp_path / "imgs", raw.items())
    store = ImageStore(tmp_path / "imgs")
    assert store.image_ids().tolist() == [2, 10]
    assert store.encoded_bytes(10) == raw[10]
    image = store.image(2)
    assert image.mode == "RGB" and image.getpixel((0, 0)) == (0, 255, 0)


def test_map_grows_instead_of_preallocating(tmp_path, monkeypatch):
    monkeypatch.setattr(imagestore, "_INITIAL_MAP_SIZE", 32 << 10)
    noise = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    count = write_image_store(tmp_path / "imgs", ((i, buffer.getvalue()) for i in range(40)))
    assert count == 40
    assert len(ImageStore(tmp_path / "imgs").image_ids()) == 40


def test_duplicate_id_leaves_no_store(tmp_path):
    with pytest.raises(ClipevalError, match="duplicate image_id 4"):
        write_image_store(tmp_path / "imgs", [(4, png("red")), (4, png("blue"))])
    assert list(tmp_path.iterdir()) == []


def test_missing_image_id_is_named(tmp_path):
    write_image_store(tmp_path / "imgs", [(1, png("red"))])
    with pytest.raises(ClipevalError, match="no image with image_id 9"):
        ImageStore(tmp_path / "imgs").encoded_bytes(9)


def test_undecodable_image_is_named(tmp_path):
    write_image_store(tmp_path / "imgs", [(5, b"not an image")])
    with pytest.raises(ClipevalError, match="image_id 5: image does not decode"):
        ImageStore(tmp_path / "imgs").image(5)


def test_missing_store_directory(tmp_path):
    with pytest.raises(ClipevalError, match="image LMDB directory not found"):
        ImageStore(tmp_path / "nope")


# An Encapsulated PostScript file: PIL identifies it by content and, to decode it, runs Ghostscript.
EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\n%%EndComments\nnewpath 0 0 moveto 8 8 lineto stroke\n"


@pytest.mark.parametrize("fmt", imagestore.IMAGE_FORMATS)
def test_each_documented_format_decodes(fmt):
    buffer = io.BytesIO()
    Image.new("RGB", (6, 4), (200, 10, 30)).save(buffer, format=fmt)
    image = imagestore.decode_image(buffer.getvalue(), "x")
    assert image.mode == "RGB" and image.size == (6, 4)


def test_a_file_in_another_format_is_refused_before_any_plugin_reads_it():
    assert Image.open(io.BytesIO(EPS)).format == "EPS"  # what an unrestricted PIL would go on to decode
    with pytest.raises(ClipevalError) as error:
        imagestore.decode_image(EPS, "folder/cat.png")
    assert str(error.value) == "folder/cat.png: image does not decode (not JPEG, PNG, WEBP, BMP, GIF, TIFF)"


def test_images_are_committed_in_batches_and_the_map_still_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(imagestore, "_INITIAL_MAP_SIZE", 32 << 10)
    monkeypatch.setattr(imagestore, "IMAGES_PER_COMMIT", 3)
    raw = {image_id: png((image_id, 0, 0), size=(64, 64)) for image_id in range(10)}
    assert write_image_store(tmp_path / "imgs", raw.items()) == 10
    store = ImageStore(tmp_path / "imgs")
    assert store.image_ids().tolist() == list(range(10))
    assert all(store.encoded_bytes(image_id) == raw[image_id] for image_id in raw)
    with pytest.raises(ClipevalError, match="duplicate image_id 1$"):
        write_image_store(tmp_path / "again", [(i, png("red")) for i in (0, 1, 2, 3, 4, 1)])
    assert not (tmp_path / "again").exists()
