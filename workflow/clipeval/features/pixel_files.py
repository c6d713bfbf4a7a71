"""A pixel shard on disk: a folder of manifest.json and, unless the stage is switched off, pixels.npy.

pixels.npy is a plain .npy of uint8, images × height × width × 3, in the
dataset's ascending image-id order, read memory-mapped. The manifest names
the recipe, which images the shard holds (its first position and a digest
of its ids) and the digest of pixels.npy, so extraction checks it reads the
pixels it expects, as decode-pixels wrote them. Without
pixels.npy (`extract.pixels: false`, or the file deleted to free the disk)
extraction decodes the images itself, to the same bits.
"""

import hashlib
from pathlib import Path

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output, make_folder
from clipeval.storage.digests import file_piecewise_sha256
from clipeval.storage.jsonl import read_json, write_json

MANIFEST = "manifest.json"
PIXELS = "pixels.npy"
FORMAT = 2  # 1 had no digest of pixels.npy


def ids_sha256(image_ids: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(image_ids, dtype="<i8").tobytes()).hexdigest()


def write_pixel_shard(folder, recipe: str, start: int, image_ids: np.ndarray, batches, shape=None) -> None:
    """Write a shard's folder whole or not at all. `batches` yields uint8 row blocks in order; with `shape`
    (height, width) they are stored in pixels.npy, without it only the manifest is written."""
    with atomic_output(folder) as temporary:
        make_folder(temporary)
        if shape is not None:
            pixels = np.lib.format.open_memmap(
                temporary / PIXELS, mode="w+", dtype=np.uint8, shape=(len(image_ids), *shape, 3)
            )
            position = 0
            for rows in batches:
                pixels[position : position + len(rows)] = rows
                position += len(rows)
            if position != len(image_ids):
                raise ClipevalError(f"{folder}: {position} images decoded for {len(image_ids)} ids")
            pixels.flush()
            del pixels
        manifest = {
            "format": FORMAT,
            "recipe": recipe,
            "start": start,
            "images": len(image_ids),
            "image_ids_sha256": ids_sha256(image_ids),
        }
        if shape is not None:
            manifest["pixels_sha256"] = file_piecewise_sha256(temporary / PIXELS)
        write_json(temporary / MANIFEST, manifest)


class StoredPixels:
    """The pixels of a dataset's images for one recipe, from the shards that hold them, read by position in the
    dataset's ascending id list."""

    def __init__(self, parts: list[tuple[int, np.ndarray]]):
        self.parts = sorted(parts, key=lambda part: part[0])

    @property
    def row_shape(self) -> tuple:
        """(height, width, 3) of every row."""
        return self.parts[0][1].shape[1:]

    def rows(self, first: int, last: int) -> np.ndarray:
        pieces = [
            array[max(first - start, 0) : last - start]
            for start, array in self.parts
            if start < last and start + len(array) > first
        ]
        rows = np.concatenate(pieces) if len(pieces) > 1 else np.asarray(pieces[0]) if pieces else None
        if rows is None or len(rows) != last - first:
            raise ClipevalError(f"the pixel shards given do not hold positions [{first}, {last})")
        return rows


def open_stored_pixels(folders, recipe: str, image_ids: np.ndarray) -> StoredPixels | None:
    """The stored pixels of these shard folders, checked against the recipe and ids expected; None when a
    shard holds no pixels.npy (the images are then decoded again)."""
    parts = []
    for folder in map(Path, folders):
        manifest = read_json(folder / MANIFEST)
        if manifest.get("format") != FORMAT or manifest.get("recipe") != recipe:
            raise ClipevalError(
                f"{folder}: pixels of recipe {manifest.get('recipe')!r} (format {manifest.get('format')}),"
                f" not {recipe!r}"
            )
        start, count = manifest["start"], manifest["images"]
        if ids_sha256(image_ids[start : start + count]) != manifest["image_ids_sha256"]:
            raise ClipevalError(f"{folder}: its images are not positions [{start}, {start + count}) of this dataset")
        if not (folder / PIXELS).is_file():
            return None
        if file_piecewise_sha256(folder / PIXELS) != manifest.get("pixels_sha256"):
            raise ClipevalError(
                f"{folder / PIXELS}: not the pixels decode-pixels wrote (it changed since): delete {folder} and run"
                " again, to decode the images anew"
            )
        array = np.load(folder / PIXELS, mmap_mode="r")
        if array.dtype != np.uint8 or array.ndim != 4 or len(array) != count or array.shape[3] != 3:
            raise ClipevalError(f"{folder / PIXELS}: {array.dtype} {array.shape}, not {count} uint8 RGB images")
        parts.append((start, array))
    return StoredPixels(parts)
