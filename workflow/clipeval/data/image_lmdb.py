"""Images in LMDB, Chinese-CLIP layout.

Key `str(image_id).encode()`, value the base64 of the original encoded image
bytes, plus `b"num_images"` holding the decimal count.
"""

import base64
import binascii
import io
import warnings
from collections.abc import Iterable
from pathlib import Path

import lmdb
import numpy as np
from PIL import Image

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output
from clipeval.storage.ids import ID_LIMIT

COUNT_KEY = b"num_images"
_INITIAL_MAP_SIZE = 64 << 20


# The most pixels an image may have: PIL's own decompression-bomb threshold
# (about 9,500 × 9,500), far above any benchmark's images. PIL only warns
# between it and twice it, and would decode such an image to gigabytes; a
# few hundred bytes of PNG can claim that size.
MAX_IMAGE_PIXELS = 89_478_485


# The formats clipeval reads. PIL would otherwise identify any file by its
# content with every plugin it has, EPS among them, which runs Ghostscript.
IMAGE_FORMATS = ("JPEG", "PNG", "WEBP", "BMP", "GIF", "TIFF")


def decode_image(raw: bytes, where: str) -> Image.Image:
    """Decode encoded image bytes to RGB, or raise naming `where`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(raw), formats=IMAGE_FORMATS)
            width, height = image.size  # from the header: nothing is decoded yet
            if width * height > MAX_IMAGE_PIXELS:
                raise Image.DecompressionBombWarning(f"{width} × {height}")
            image.load()
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise ClipevalError(
            f"{where}: image has more than {MAX_IMAGE_PIXELS:,} pixels, not decoded"
            " (a decompression bomb, or not a benchmark image)"
        ) from None
    except Image.UnidentifiedImageError:
        raise ClipevalError(f"{where}: image does not decode (not {', '.join(IMAGE_FORMATS)})") from None
    except Exception as error:  # PIL raises many types for corrupt data
        raise ClipevalError(f"{where}: image does not decode ({type(error).__name__})") from None
    return image.convert("RGB")


_URLSAFE_TO_STANDARD = bytes.maketrans(b"-_", b"+/")


def decode_base64(value: bytes, where: str) -> bytes:
    """Standard or URL-safe base64, as Chinese-CLIP's reader accepts both."""
    try:
        return base64.b64decode(bytes(value).translate(_URLSAFE_TO_STANDARD), validate=True)
    except (binascii.Error, ValueError):
        raise ClipevalError(f"{where}: value is not valid base64") from None


def write_image_store(path, images: Iterable[tuple[int, bytes]], shown_as=None) -> int:
    """Write (image_id, encoded bytes) pairs to a new LMDB at `path`, atomically; messages name it `shown_as`
    (where it ends up, when `path` is inside a folder that is renamed into place afterwards).

    The map starts small and doubles when full, instead of preallocating.
    Duplicate ids are an error. Returns the number of images written.
    """
    path = Path(path)
    shown = path if shown_as is None else shown_as
    with atomic_output(path) as temporary:
        try:
            env = lmdb.open(str(temporary), map_size=_INITIAL_MAP_SIZE, subdir=True, lock=True)
            try:
                return _fill(env, images, shown)
            finally:
                env.close()
        except lmdb.Error as error:  # a full disk, a file size limit: "mdb_txn_commit: No space left on device"
            reason = str(error).rsplit(": ", 1)[-1]
            raise ClipevalError(f"{shown}: cannot write the image store ({reason})") from None


# Images written to the store per transaction: one commit each would sync the map that often, and the
# store only becomes visible whole anyway (write_image_store writes it beside its place).
IMAGES_PER_COMMIT = 512


def _fill(env, images: Iterable[tuple[int, bytes]], shown) -> int:
    count = 0
    batch = []
    for image_id, raw in images:
        batch.append((str(image_id).encode(), base64.b64encode(raw), image_id))
        if len(batch) == IMAGES_PER_COMMIT:
            count += _commit(env, batch, shown)
            batch = []
    count += _commit(env, batch + [(COUNT_KEY, None, None)], shown, total=count + len(batch))
    return count


def _commit(env, batch, shown, total=None) -> int:
    """Put (key, value, image_id) pairs in one transaction, the map grown until they fit; `total`, when given,
    goes under COUNT_KEY (the entry whose value is None). Returns the images put."""
    while True:
        try:
            with env.begin(write=True) as txn:
                for key, value, image_id in batch:
                    if value is None:
                        txn.put(COUNT_KEY, str(total).encode())
                    elif not txn.put(key, value, overwrite=False):
                        raise ClipevalError(f"{shown}: duplicate image_id {image_id}")
            return sum(value is not None for _, value, _ in batch)
        except lmdb.MapFullError:
            env.set_mapsize(env.info()["map_size"] * 2)


class ImageStore:
    """Read-only access to an LMDB image store; safe to reopen in worker processes."""

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise ClipevalError(f"{self.path}: image LMDB directory not found")
        self._env = None

    def _open(self):
        if self._env is None:
            try:
                self._env = lmdb.open(str(self.path), readonly=True, lock=False, readahead=False, meminit=False)
            except lmdb.Error as error:
                raise ClipevalError(f"{self.path}: not a readable LMDB ({error})") from None
        return self._env

    def close(self):
        if self._env is not None:
            self._env.close()
            self._env = None

    def __getstate__(self):
        # An open LMDB environment must not cross a fork; workers reopen it.
        return {"path": self.path, "_env": None}

    def image_ids(self) -> np.ndarray:
        """All image ids in ascending order."""
        ids = []
        with self._open().begin() as txn:
            for key in txn.cursor().iternext(keys=True, values=False):
                if key == COUNT_KEY:
                    continue
                ids.append(self._image_id(bytes(key)))
        if not ids:
            raise ClipevalError(f"{self.path}: the image store holds no images")
        return np.array(sorted(ids), dtype=np.int64)

    def _image_id(self, key: bytes) -> int:
        """A key as its image id: str(image_id) exactly, as images are looked up by it."""
        if not key.isdigit() or str(int(key)).encode() != key:
            raise ClipevalError(f"{self.path}: key {key[:40]!r} is not an image id (written as str(image_id))")
        if int(key) >= ID_LIMIT:
            raise ClipevalError(f"{self.path}: key {key[:40]!r} is too large for an image id (ids are below 2^63)")
        return int(key)

    def claimed_count(self) -> int | None:
        """The count the store's `num_images` entry states, None without one; it may disagree with the keys."""
        with self._open().begin() as txn:
            value = txn.get(COUNT_KEY)
        if value is None:
            return None
        try:
            return int(bytes(value))
        except ValueError:
            raise ClipevalError(f"{self.path}: num_images {bytes(value)[:40]!r} is not a count") from None

    def encoded_bytes(self, image_id: int) -> bytes:
        with self._open().begin() as txn:
            value = txn.get(str(image_id).encode())
        if value is None:
            raise ClipevalError(f"{self.path}: no image with image_id {image_id}")
        return decode_base64(value, f"{self.path}: image_id {image_id}")

    def image(self, image_id: int) -> Image.Image:
        return decode_image(self.encoded_bytes(image_id), f"{self.path}: image_id {image_id}")
