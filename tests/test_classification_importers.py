"""imagefolder and cifar: classification datasets from the layouts they ship in."""

import io
import json
import sys

import numpy as np
import pytest
from conftest import run_cli, run_measuring_peak_memory
from PIL import Image
from sources import object_array_as_shape_pickle, python2_pickle, write_cifar

from clipeval.data.image_lmdb import ImageStore


def png(colour, mode="RGB", size=(8, 6)):
    buffer = io.BytesIO()
    Image.new(mode, size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def read_lines(path):
    return [json.loads(line) for line in open(path)]


def prepare_cifar(batch, tmp_path):
    """`clipeval prepare cifar` of `batch` with a one-line templates file, into tmp_path/out."""
    (tmp_path / "templates.txt").write_text("a photo of a {}.\n")
    return run_cli(
        "prepare", "cifar", "--batch", batch, "--templates", tmp_path / "templates.txt", "--out", tmp_path / "out"
    )


@pytest.fixture
def folders(tmp_path):
    """cat/ (2 images), dog/ (1 image, grayscale), a hidden file; names file and templates."""
    root = tmp_path / "val"
    for folder, images in {
        "cat": {"b.png": png((255, 0, 0)), "a.png": png((0, 255, 0), "RGBA")},
        "dog": {"x.png": png(128, "L", (3, 17))},
    }.items():
        (root / folder).mkdir(parents=True)
        for name, raw in images.items():
            (root / folder / name).write_bytes(raw)
    (root / "cat" / ".DS_Store").write_bytes(b"junk")
    (tmp_path / "templates.txt").write_text("a photo of a {}.\nart of the {}.\n")
    return root


def import_folder(tmp_path, root, names, *extra):
    (tmp_path / "names.txt").write_text(names)
    return run_cli(
        "prepare",
        "imagefolder",
        "--images",
        root,
        "--classnames",
        tmp_path / "names.txt",
        "--templates",
        tmp_path / "templates.txt",
        *extra,
        "--out",
        tmp_path / "out",
    )


def test_imagefolder_with_names_equal_to_folders(tmp_path, folders):
    result = import_folder(tmp_path, folders, "dog\ncat\n", "--first-image-id", 100)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote 3 labelled images to {tmp_path / 'out'}"
    # class index follows the names file: dog is 0; images go class by class, files sorted
    assert read_lines(tmp_path / "out/labels.jsonl") == [
        {"image_id": 100, "label": 0},
        {"image_id": 101, "label": 1},
        {"image_id": 102, "label": 1},
    ]
    assert json.loads((tmp_path / "out/classes.json").read_text()) == {
        "classnames": ["dog", "cat"],
        "templates": ["a photo of a {}.", "art of the {}."],
    }
    store = ImageStore(tmp_path / "out/images.lmdb")
    assert store.image_ids().tolist() == [100, 101, 102]
    assert store.encoded_bytes(101) == (folders / "cat/a.png").read_bytes()
    meta = json.loads((tmp_path / "out/meta.json").read_text())
    assert meta["counts"] == {"images": 3} and meta["source"]["format"] == "imagefolder"
    assert not (tmp_path / "out/texts.jsonl").exists()


def test_imagefolder_with_folder_to_name_lines_and_wnid_style_folders(tmp_path, folders):
    result = import_folder(tmp_path, folders, "cat\tsmall cat\ndog\tbig dog\n")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out/classes.json").read_text())["classnames"] == ["small cat", "big dog"]
    # no name is a folder: names pair with the sorted folders, as ImageNet's wnid folders do
    result = import_folder(tmp_path, folders, "tabby\nterrier\n")
    assert result.returncode == 0, result.stderr
    assert [row["label"] for row in read_lines(tmp_path / "out/labels.jsonl")] == [0, 0, 1]


@pytest.mark.parametrize(
    "names, message",
    [
        ("cat\n", "{root}: folder 'dog' is not a class in {names} (1 such)"),
        ("cat\ndog\nbird\n", "{root}: no folder 'bird' for a class in {names} (1 missing)"),
        ("tabby\nterrier\nparrot\n", "{root}: 2 class folders but 3 class names in {names}"),
        ("cat\tc\ndog\n", "{names}: give a folder for every class or for none"),
        ("cat\ncat\n", "{names}: class name 'cat' appears twice"),
    ],
)
def test_class_folders_that_do_not_match_the_names(tmp_path, folders, names, message):
    result = import_folder(tmp_path, folders, names)
    assert result.returncode == 1
    expected = message.format(root=folders, names=tmp_path / "names.txt")
    assert result.stderr.strip().splitlines() == [f"clipeval: error: {expected}"]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_imagefolder_bad_images_and_templates(tmp_path, folders):
    (folders / "dog/broken.png").write_bytes(png(1)[:30])
    result = import_folder(tmp_path, folders, "cat\ndog\n")
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    assert (
        result.stderr.strip()
        == f"clipeval: error: {folders / 'dog/broken.png'}: image_id 2: image does not decode (not JPEG, PNG, WEBP, BMP, GIF, TIFF)"
    )
    (folders / "dog/broken.png").unlink()
    (tmp_path / "templates.txt").write_text("a photo of a {}.\na photo\n")
    result = import_folder(tmp_path, folders, "cat\ndog\n")
    assert (
        result.stderr.strip()
        == f"clipeval: error: {tmp_path / 'templates.txt'}:2: template 'a photo' has no {{}} for the class name"
    )


def bomb_png(width, height):
    """A valid grey PNG of width × height black pixels: a few hundred kilobytes that decode to width × height bytes."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    compressor, row, parts = zlib.compressobj(9), bytes(1 + width), []
    for _ in range(height):
        parts.append(compressor.compress(row))
    parts.append(compressor.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")


@pytest.mark.slow
@pytest.mark.parametrize("width, height", [(10_000, 9_000), (20_000, 20_000)])
def test_a_decompression_bomb_is_refused_before_it_is_decoded(tmp_path, folders, width, height):
    """90M pixels: PIL would only warn and decode it (then convert it to RGB); 400M: PIL refuses on its own."""
    (folders / "dog/huge.png").write_bytes(bomb_png(width, height))
    (tmp_path / "names.txt").write_text("cat\ndog\n")
    result, peak = run_measuring_peak_memory(
        [
            sys.executable,
            "-m",
            "clipeval",
            "prepare",
            "imagefolder",
            "--images",
            folders,
            "--classnames",
            tmp_path / "names.txt",
            "--templates",
            tmp_path / "templates.txt",
            "--out",
            tmp_path / "out",
        ],
        tmp_path / "peak",
    )
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    assert result.stderr.strip() == (
        f"clipeval: error: {folders / 'dog/huge.png'}: image_id 2: image has more than 89,478,485 pixels,"
        " not decoded (a decompression bomb, or not a benchmark image)"
    )
    # Decoding would take width × height bytes (grey), and three times that converted to RGB.
    assert peak < width * height


def test_imagefolder_refuses_a_folder_inside_a_class_folder(tmp_path, folders):
    (folders / "cat/more").mkdir()
    result = import_folder(tmp_path, folders, "cat\ndog\n")
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    assert (
        result.stderr.strip()
        == f"clipeval: error: {folders / 'cat/more'}: a class folder holds images only, not folders"
    )


def test_imagefolder_refuses_a_fifo_in_a_class_folder_as_no_regular_file(tmp_path, folders):
    import os

    os.mkfifo(folders / "cat/pipe.png")  # reading it would wait forever
    result = import_folder(tmp_path, folders, "cat\ndog\n")
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    assert result.stderr.strip().startswith(f"clipeval: error: {folders}: image_id ")
    assert result.stderr.strip().endswith(f": image file {folders / 'cat/pipe.png'} is not a regular file")


def test_imagefolder_without_images_is_an_empty_dataset(tmp_path):
    (tmp_path / "val/cat").mkdir(parents=True)
    (tmp_path / "templates.txt").write_text("a photo of a {}.\n")
    result = import_folder(tmp_path, tmp_path / "val", "cat\n")
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    assert result.stderr.strip() == f"clipeval: error: {tmp_path / 'val'}: the dataset has no images"


@pytest.mark.parametrize("layout", ["cifar10", "cifar100"])
def test_cifar_batches_round_trip_pixels_labels_and_names(tmp_path, layout):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(7, 32, 32, 3), dtype=np.uint8)
    labels = [0, 2, 1, 1, 0, 2, 2]
    batch = write_cifar(tmp_path / "src", layout, pixels, labels, ["apple", "aquarium_fish", "bear"])
    (tmp_path / "templates.txt").write_text("a photo of a {}.\n")
    result = run_cli(
        "prepare",
        "cifar",
        "--batch",
        batch,
        "--templates",
        tmp_path / "templates.txt",
        "--first-image-id",
        10,
        "--out",
        tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr
    store = ImageStore(tmp_path / "out/images.lmdb")
    assert store.image_ids().tolist() == list(range(10, 17))
    for index in range(7):
        decoded = np.asarray(Image.open(io.BytesIO(store.encoded_bytes(10 + index))))
        assert np.array_equal(decoded, pixels[index])
    assert [row["label"] for row in read_lines(tmp_path / "out/labels.jsonl")] == labels
    classes = json.loads((tmp_path / "out/classes.json").read_text())
    assert classes["classnames"] == ["apple", "aquarium fish", "bear"]
    assert json.loads((tmp_path / "out/meta.json").read_text())["source"]["layout"] == layout


class RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickle_that_would_run_code_is_refused_unrun(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "src").mkdir()
    (tmp_path / "src/test_batch").write_bytes(python2_pickle({b"labels": [0], b"data": RunsCode(marker)}))
    (tmp_path / "templates.txt").write_text("a photo of a {}.\n")
    result = run_cli(
        "prepare",
        "cifar",
        "--batch",
        tmp_path / "src/test_batch",
        "--templates",
        tmp_path / "templates.txt",
        "--out",
        tmp_path / "out",
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"clipeval: error: {tmp_path / 'src/test_batch'}: refusing to load io.open:"
        " a dataset pickle may hold plain data only"
    )
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_a_pickle_that_would_corrupt_memory_is_refused_unrun(tmp_path):
    """Only numpy names the old unpickler allowed, yet running it dereferenced a forged pointer (exit 139)."""
    batch = tmp_path / "src/test_batch"
    batch.parent.mkdir()
    batch.write_bytes(object_array_as_shape_pickle())
    result = prepare_cifar(batch, tmp_path)
    assert (result.returncode, result.stderr.strip()) == (
        1,
        f"clipeval: error: {batch}: numpy dtype b'O8', not uint8: a dataset pickle may hold plain data only",
    )
    assert not (tmp_path / "out").exists()


def test_truncated_cifar_batch_and_bad_labels(tmp_path):
    pixels = np.zeros((2, 32, 32, 3), dtype=np.uint8)
    batch = write_cifar(tmp_path / "src", "cifar10", pixels, [0, 5], ["a", "b"])
    result = prepare_cifar(batch, tmp_path)
    assert result.stderr.strip() == f"clipeval: error: {batch}: image 1 has label 5, not a class index below 2"
    batch.write_bytes(batch.read_bytes()[:100])
    result = run_cli(
        "prepare", "cifar", "--batch", batch, "--templates", tmp_path / "templates.txt", "--out", tmp_path / "out"
    )
    assert result.returncode == 1 and result.stderr.startswith(
        f"clipeval: error: {batch}: not a readable CIFAR pickle ("
    )
    assert not (tmp_path / "out").exists()


def test_text_that_is_not_utf8_is_named_by_file_and_line(tmp_path):
    """Class names in a CIFAR meta file, and template lines, in Latin-1 rather than UTF-8."""
    pixels = np.zeros((2, 32, 32, 3), dtype=np.uint8)
    batch = write_cifar(tmp_path / "src", "cifar10", pixels, [0, 1], ["a", "b"])
    meta = tmp_path / "src/batches.meta"
    meta.write_bytes(python2_pickle({b"label_names": [b"a", "café".encode("latin-1")]}))
    result = prepare_cifar(batch, tmp_path)
    assert (result.returncode, result.stderr) == (1, f"clipeval: error: {meta}: class name 1 is not UTF-8 text\n")
    write_cifar(tmp_path / "src", "cifar10", pixels, [0, 1], ["a", "b"])
    (tmp_path / "templates.txt").write_bytes("a photo of a {}.\nune photo d'un {} ô\n".encode("latin-1"))
    result = run_cli(
        "prepare", "cifar", "--batch", batch, "--templates", tmp_path / "templates.txt", "--out", tmp_path / "out"
    )
    assert (result.returncode, result.stderr) == (
        1,
        f"clipeval: error: {tmp_path / 'templates.txt'}:2: not UTF-8 text\n",
    )
    assert not (tmp_path / "out").exists()


def resave_with_python3(path, protocol):
    """The file as `pickle.load(f, encoding="bytes")` then `pickle.dump` with str keys and names would leave it."""
    import pickle

    def as_text(value):
        if isinstance(value, dict):
            return {key.decode(): as_text(item) for key, item in value.items()}
        if isinstance(value, list):
            return [item.decode() if isinstance(item, bytes) else item for item in value]
        return value.decode() if isinstance(value, bytes) else value

    path.write_bytes(pickle.dumps(as_text(pickle.loads(path.read_bytes(), encoding="bytes")), protocol=protocol))


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("layout", ["cifar10", "cifar100"])
def test_a_batch_resaved_by_python3_with_str_keys_reads_the_same(tmp_path, layout, protocol):
    import pickle

    from clipeval.data.sources.cifar import read_cifar

    pixels = np.random.default_rng(1).integers(0, 256, size=(5, 32, 32, 3), dtype=np.uint8)
    labels, names = [2, 0, 1, 1, 2], ["apple", "aquarium_fish", "bear"]
    original = read_cifar(write_cifar(tmp_path / "python2", layout, pixels, labels, names))
    batch = write_cifar(tmp_path / "python3", layout, pixels, labels, names)
    for file in batch.parent.iterdir():
        resave_with_python3(file, protocol)
    assert all(isinstance(key, str) for key in pickle.loads(batch.read_bytes()))
    resaved = read_cifar(batch)
    assert resaved[0] == original[0] and resaved[2:] == original[2:]
    assert np.array_equal(resaved[1], original[1])


def test_prepare_reads_a_python3_batch(tmp_path):
    pixels = np.random.default_rng(2).integers(0, 256, size=(3, 32, 32, 3), dtype=np.uint8)
    batch = write_cifar(tmp_path / "src", "cifar100", pixels, [1, 0, 1], ["maple_tree", "oak_tree"])
    for file in batch.parent.iterdir():
        resave_with_python3(file, protocol=4)
    result = prepare_cifar(batch, tmp_path)
    assert result.returncode == 0, result.stderr
    assert [row["label"] for row in read_lines(tmp_path / "out/labels.jsonl")] == [1, 0, 1]
    assert json.loads((tmp_path / "out/classes.json").read_text())["classnames"] == ["maple tree", "oak tree"]


def test_a_key_given_both_as_bytes_and_as_str_is_refused(tmp_path):
    import pickle

    pixels = np.zeros((1, 3072), dtype=np.uint8)
    batch = tmp_path / "test_batch"
    batch.write_bytes(pickle.dumps({b"labels": [0], "labels": [0], b"data": pixels}, protocol=4))
    result = prepare_cifar(batch, tmp_path)
    assert (result.returncode, result.stderr.strip()) == (
        1,
        f"clipeval: error: {batch}: key b'labels' appears both as bytes and as str",
    )
    assert not (tmp_path / "out").exists()
