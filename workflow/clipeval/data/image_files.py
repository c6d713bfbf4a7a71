"""Images kept as files in a directory, as Flickr30k, COCO and ImageNet ship them."""

from collections.abc import Iterable, Iterator
from pathlib import Path

from clipeval.data.image_lmdb import decode_image
from clipeval.errors import ClipevalError


def read_image_files(files: Iterable[tuple[int, Path]], source) -> Iterator[tuple[int, bytes]]:
    """Yield (image_id, file bytes), checking that each file exists and decodes."""
    for image_id, path in files:
        if not path.is_file():
            raise ClipevalError(f"{source}: image_id {image_id}: image file {path} not found")
        raw = path.read_bytes()
        decode_image(raw, f"{path}: image_id {image_id}")
        yield image_id, raw
