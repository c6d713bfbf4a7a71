"""CIFAR-10/100 python batches (`cifar-10-batches-py/test_batch`, `cifar-100-python/test`).

A pickle is a program: loading one may call any importable function. These
files only hold dicts, lists, bytes, numbers and uint8 arrays, so they are
read by data/plain_pickle.py, which interprets that subset without running
the pickle at all.

The release was written by Python 2: its keys and class names are bytes. A
batch re-saved by Python 3 (`pickle.load(f, encoding="bytes")`, then
`pickle.dump` with `str` keys) holds the same data under `str` keys, and is
read the same.
"""

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from clipeval.data.plain_pickle import load_plain_pickle
from clipeval.data.sources import CLASSES, FILE, FIRST_IMAGE_ID, TEMPLATES, PreparedSource, Setting, SourceFormat
from clipeval.data.text_lists import read_templates
from clipeval.errors import ClipevalError

# label key, class-names file, class-names key, per format
LAYOUTS = {
    "cifar10": (b"labels", "batches.meta", b"label_names"),
    "cifar100": (b"fine_labels", "meta", b"fine_label_names"),
}


def load_cifar_pickle(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: file not found")
    with open(path, "rb") as handle:
        try:
            data = load_plain_pickle(path, handle)
        except ClipevalError:
            raise
        except Exception as error:  # a truncated or foreign file fails in many ways
            raise ClipevalError(f"{path}: not a readable CIFAR pickle ({type(error).__name__}: {error})") from None
    if not isinstance(data, dict):
        raise ClipevalError(f"{path}: expected a dict at the top level")
    return _bytes_keys(data, path)


def _bytes_keys(data: dict, path) -> dict:
    """The dict with each `str` key as the UTF-8 bytes the release uses."""
    keyed = {}
    for key, value in data.items():
        name = key.encode("utf-8") if isinstance(key, str) else key
        if name in keyed:
            raise ClipevalError(f"{path}: key {name!r} appears both as bytes and as str")
        keyed[name] = value
    return keyed


def detect_layout(batch: dict, path) -> str:
    for layout, (label_key, _, _) in LAYOUTS.items():
        if label_key in batch:
            return layout
    raise ClipevalError(f"{path}: no b'labels' (CIFAR-10) or b'fine_labels' (CIFAR-100) key")


def cifar_classnames(meta_path, layout: str) -> list[str]:
    """Class names from the batch's meta file, underscores read as spaces ("aquarium_fish")."""
    names = load_cifar_pickle(meta_path).get(LAYOUTS[layout][2])
    if not isinstance(names, list) or not names or not all(isinstance(n, (bytes, str)) for n in names):
        raise ClipevalError(f"{meta_path}: expected a list of class names under {LAYOUTS[layout][2]!r}")
    classnames = []
    for index, name in enumerate(names):
        try:
            classnames.append((name if isinstance(name, str) else name.decode("utf-8")).replace("_", " "))
        except UnicodeDecodeError:
            raise ClipevalError(f"{meta_path}: class name {index} is not UTF-8 text") from None
    return classnames


def read_cifar(batch_path) -> tuple[str, np.ndarray, list[int], list[str]]:
    """(layout, images as N×32×32×3 uint8, labels, class names) from a batch and the meta file beside it."""
    batch_path = Path(batch_path)
    batch = load_cifar_pickle(batch_path)
    layout = detect_layout(batch, batch_path)
    data, labels = batch.get(b"data"), batch[LAYOUTS[layout][0]]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ClipevalError(f"{batch_path}: b'data' must be a uint8 array of rows of 3072 values")
    if not isinstance(labels, list) or len(labels) != len(data):
        raise ClipevalError(f"{batch_path}: expected {len(data)} labels, one per image")
    classnames = cifar_classnames(batch_path.parent / LAYOUTS[layout][1], layout)
    for index, label in enumerate(labels):
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(classnames):
            raise ClipevalError(
                f"{batch_path}: image {index} has label {label!r}, not a class index below {len(classnames)}"
            )
    return layout, data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels, classnames


def png_images(pixels: np.ndarray, first_image_id: int) -> Iterator[tuple[int, bytes]]:
    """Each image as lossless PNG bytes, ids counting up from first_image_id in file order."""
    for index, image in enumerate(pixels):
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(image), "RGB").save(buffer, format="PNG")
        yield first_image_id + index, buffer.getvalue()


def read(settings) -> PreparedSource:
    templates = read_templates(settings["templates"])
    layout, pixels, labels, classnames = read_cifar(settings["batch"])
    source = {
        "format": "cifar",
        "layout": layout,
        "batch": str(settings["batch"]),
        "templates": str(settings["templates"]),
    }
    first = settings["first_image_id"]
    classes = (list(zip(range(first, first + len(labels)), labels)), classnames, templates)
    return PreparedSource(png_images(pixels, first), None, source, classes)


def batch_files_to_track(batch) -> list[str]:
    """The batch and the class-names file beside it (CIFAR-100's meta, CIFAR-10's batches.meta)."""
    folder = Path(batch).parent
    return [str(batch), str(folder / ("meta" if (folder / "meta").exists() else "batches.meta"))]


FORMAT = SourceFormat(
    name="cifar",
    help="a CIFAR-10/100 python batch (classification)",
    writes=CLASSES,
    settings=(
        Setting(
            "batch",
            "cifar-10-batches-py/test_batch or cifar-100-python/test (its meta file beside it)",
            kind=FILE,
            type=Path,
            required=True,
            tracked_files=batch_files_to_track,
        ),
        TEMPLATES,
        FIRST_IMAGE_ID,
    ),
    read=read,
)
