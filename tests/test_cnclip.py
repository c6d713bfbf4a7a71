import base64
import io
import json
from pathlib import Path

import lmdb
import pytest
from conftest import collected, run_cli
from PIL import Image

from clipeval.data.dataset import open_dataset, write_dataset
from clipeval.data.sources.cnclip import FORMAT
from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_json


def encoded(colour, fmt="JPEG", mode="RGB"):
    buffer = io.BytesIO()
    Image.new(mode, (12, 9), colour).save(buffer, format=fmt)
    return buffer.getvalue()


IMAGES = {1076345: encoded("red"), 517: encoded("blue", "PNG"), 9: encoded(128, "PNG", "L")}
TEXTS = [
    {"text_id": 8428, "text": "红色的图片", "image_ids": [1076345]},
    {"text_id": 8429, "text": "a blue one", "image_ids": [517]},
    {"text_id": 12, "text": "grey, or red", "image_ids": [9, 1076345]},
]


def import_cnclip(images, texts, out_dir):
    return write_dataset(out_dir, FORMAT.read({"images": Path(images), "texts": Path(texts)}))


def write_tsv(path, images):
    path.write_text("".join(f"{i}\t{base64.b64encode(raw).decode()}\n" for i, raw in images.items()))
    return path


def write_texts(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def source(tmp_path):
    return write_tsv(tmp_path / "test_imgs.tsv", IMAGES), write_texts(tmp_path / "test_texts.jsonl", TEXTS)


def test_import_from_tsv_keeps_the_exact_bytes(tmp_path, source):
    meta = import_cnclip(*source, tmp_path / "out")
    store, captions = open_dataset(tmp_path / "out")
    assert store.image_ids().tolist() == [9, 517, 1076345]
    assert all(store.encoded_bytes(i) == raw for i, raw in IMAGES.items())
    assert store.image(9).mode == "RGB"
    assert captions.texts[0] == "红色的图片"
    assert meta["counts"] == {"images": 3, "texts": 3, "images_without_caption": 0}
    assert meta == read_json(tmp_path / "out/meta.json")


def test_checksum_is_stable_and_content_sensitive(tmp_path, source):
    first = import_cnclip(*source, tmp_path / "a")["checksum"]
    assert import_cnclip(*source, tmp_path / "b")["checksum"] == first
    write_tsv(source[0], {**IMAGES, 517: encoded("green", "PNG")})
    assert import_cnclip(*source, tmp_path / "c")["checksum"] != first


def test_import_from_a_chinese_clip_lmdb(tmp_path, source):
    # Chinese-CLIP's builder: str(id) keys, base64 text values, b"num_images"
    env = lmdb.open(str(tmp_path / "imgs"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for image_id, raw in IMAGES.items():
            txn.put(str(image_id).encode("utf-8"), base64.urlsafe_b64encode(raw))
        txn.put(b"num_images", str(len(IMAGES)).encode("utf-8"))
    env.close()
    import_cnclip(tmp_path / "imgs", source[1], tmp_path / "out")
    store, _ = open_dataset(tmp_path / "out")
    assert all(store.encoded_bytes(i) == raw for i, raw in IMAGES.items())


@pytest.mark.parametrize(
    "claimed, message",
    [
        (b"1000000000000", "num_images says 1000000000000, but the LMDB holds 3 images"),
        (b"2", "num_images says 2, but the LMDB holds 3 images"),
        (b"many", "num_images b'many' is not a count"),
    ],
)
def test_an_lmdb_whose_count_disagrees_with_its_images_is_refused(tmp_path, source, claimed, message):
    entries = {str(image_id).encode(): base64.b64encode(raw) for image_id, raw in IMAGES.items()}
    assert_lmdb_refused(tmp_path, source, {**entries, b"num_images": claimed}, message)


def assert_lmdb_refused(tmp_path, source, entries, message):
    """An image LMDB of these entries is refused with this message after its path, and nothing is written."""
    env = lmdb.open(str(tmp_path / "imgs"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for key, value in entries.items():
            txn.put(key, value)
    env.close()
    with pytest.raises(ClipevalError) as error:
        import_cnclip(tmp_path / "imgs", source[1], tmp_path / "out")
    assert str(error.value) == f"{tmp_path / 'imgs'}: {message}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "key, message",
    [
        (b"0517", "key b'0517' is not an image id (written as str(image_id))"),
        (b"-517", "key b'-517' is not an image id (written as str(image_id))"),
        (b" 517", "key b' 517' is not an image id (written as str(image_id))"),
        (b"99999999999999999999", "key b'99999999999999999999' is too large for an image id (ids are below 2^63)"),
    ],
)
def test_an_lmdb_key_that_is_not_an_image_id_is_refused(tmp_path, source, key, message):
    entries = {
        key if image_id == 517 else str(image_id).encode(): base64.b64encode(raw) for image_id, raw in IMAGES.items()
    }
    assert_lmdb_refused(tmp_path, source, entries, message)


def test_an_endless_tsv_line_is_refused_without_reading_it_whole(tmp_path, source):
    with open(source[0], "wb") as handle:
        handle.write(b"1\t")
        handle.truncate((64 << 20) + 10)
    with pytest.raises(ClipevalError) as error:
        import_cnclip(*source, tmp_path / "out")
    assert str(error.value) == f"{source[0]}:1: line longer than 64 MiB, not read"


def test_images_without_caption_are_kept_and_counted(tmp_path, source):
    write_texts(source[1], TEXTS[:2])
    meta = import_cnclip(*source, tmp_path / "out")
    assert meta["counts"]["images"] == 3 and meta["counts"]["images_without_caption"] == 1


@pytest.mark.parametrize(
    "tsv_text, message",
    [
        ("1\tAAAA\textra\n", r"test_imgs\.tsv:1: expected 2 tab-separated fields \(image_id, base64\), got 3"),
        ("x1\tAAAA\n", r"test_imgs\.tsv:1: image_id 'x1' is not an integer"),
        ("1\t!!!notbase64\n", r"test_imgs\.tsv:1: image_id 1: value is not valid base64"),
        (
            "1\t" + base64.b64encode(b"plain text").decode() + "\n",
            r"test_imgs\.tsv:1: image_id 1: image does not decode",
        ),
        (
            "1\t" + base64.b64encode(encoded("red")[:40]).decode() + "\n",
            r"test_imgs\.tsv:1: image_id 1: image does not decode",
        ),
    ],
)
def test_bad_tsv_lines_leave_nothing_behind(tmp_path, source, tsv_text, message):
    source[0].write_text(tsv_text)
    with pytest.raises(ClipevalError, match=message):
        import_cnclip(*source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_duplicate_image_id_in_tsv(tmp_path, source):
    raw = base64.b64encode(IMAGES[517]).decode()
    source[0].write_text(f"517\t{raw}\n517\t{raw}\n")
    with pytest.raises(ClipevalError, match=r"test_imgs\.tsv:2: duplicate image_id 517 \(first on line 1\)"):
        import_cnclip(*source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_caption_pointing_to_unknown_image(tmp_path, source):
    write_texts(source[1], TEXTS + [{"text_id": 1, "text": "lost", "image_ids": [404]}])
    with pytest.raises(ClipevalError, match=r"test_texts\.jsonl: text_id 1 points to unknown image_id 404"):
        import_cnclip(*source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_import(tmp_path, source):
    result = run_cli("prepare", "cnclip", "--images", source[0], "--texts", source[1], "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "wrote 3 images, 3 captions" in result.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["images.lmdb", "meta.json", "texts.jsonl"]


def test_cli_import_error_is_one_line(tmp_path, source):
    source[0].write_text("1\tAAAA\textra\n")
    result = run_cli("prepare", "cnclip", "--images", source[0], "--texts", source[1], "--out", tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"clipeval: error: {source[0]}:1: expected 2 tab-separated fields (image_id, base64), got 3"
    ]
    assert not (tmp_path / "out").exists()


def test_empty_image_file_is_an_empty_dataset(tmp_path, source):
    source[0].write_text("")
    with pytest.raises(ClipevalError, match=r"test_imgs\.tsv: the dataset has no images"):
        import_cnclip(*source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unusual_modes_and_sizes_are_converted_not_rejected(tmp_path, source, tiny_checkpoint):
    """Grayscale, RGBA, palette, CMYK and odd sizes all import and encode."""
    from clipeval.features.encode import iter_image_features
    from clipeval.models.build import build_model

    def encoded_image(mode, size, fmt):
        buffer = io.BytesIO()
        Image.new(mode, size, 60).save(buffer, format=fmt)
        return buffer.getvalue()

    odd = {
        1: encoded_image("L", (1, 300), "PNG"),
        2: encoded_image("RGBA", (37, 5), "PNG"),
        3: encoded_image("P", (64, 63), "PNG"),
        4: encoded_image("CMYK", (17, 17), "JPEG"),
        5: encoded_image("LA", (3, 2), "PNG"),
        6: encoded_image("I;16", (9, 9), "PNG"),
    }
    write_tsv(source[0], odd)
    write_texts(source[1], [{"text_id": i, "text": f"image {i}", "image_ids": [i]} for i in odd])
    import_cnclip(*source, tmp_path / "out")
    store, _ = open_dataset(tmp_path / "out")
    assert all(store.image(i).mode == "RGB" for i in odd)
    model, preprocess, _ = build_model("clipeval-tiny", str(tiny_checkpoint))
    ids, matrix = collected(
        iter_image_features(
            model, preprocess, store, store.image_ids(), batch_size=4, num_workers=0, device="cpu", precision="fp32"
        )
    )
    assert ids.tolist() == list(odd) and matrix.shape == (6, 64)


def dataset_files(directory):
    return {path.relative_to(directory): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


def test_a_failed_import_over_a_dataset_leaves_it_as_it_was(tmp_path, source):
    import_cnclip(*source, tmp_path / "out")
    before = dataset_files(tmp_path / "out")
    source[0].write_text(source[0].read_text() + "77\tnot base64!\n")
    result = run_cli("prepare", "cnclip", "--images", source[0], "--texts", source[1], "--out", tmp_path / "out")
    assert result.returncode == 1 and result.stderr.startswith(f"clipeval: error: {source[0]}:4: image_id 77")
    assert dataset_files(tmp_path / "out") == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "test_imgs.tsv", "test_texts.jsonl"]


def test_a_new_import_replaces_the_dataset_whole(tmp_path, source):
    import_cnclip(*source, tmp_path / "out")
    (tmp_path / "out/labels.jsonl").write_text("left from an older classification dataset\n")
    write_texts(source[1], TEXTS[:1])
    meta = import_cnclip(*source, tmp_path / "out")
    assert meta["counts"] == {"images": 3, "texts": 1, "images_without_caption": 2}
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["images.lmdb", "meta.json", "texts.jsonl"]


def test_an_import_into_a_folder_of_other_files_is_refused(tmp_path, source):
    (tmp_path / "data").mkdir()
    (tmp_path / "data/notes.txt").write_text("mine")
    result = run_cli("prepare", "cnclip", "--images", source[0], "--texts", source[1], "--out", tmp_path / "data")
    assert (result.returncode, result.stderr.strip()) == (
        1,
        f"clipeval: error: {tmp_path / 'data'}: holds 'notes.txt',"
        " which is not part of a prepared dataset: write to a new or"
        " empty folder",
    )
    assert dataset_files(tmp_path / "data") == {Path("notes.txt"): b"mine"}
