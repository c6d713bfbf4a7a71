"""Images kept as files in a directory, as Flickr30k, COCO and ImageNet ship them."""

import stat
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from clipeval.data.image_lmdb import decode_image
from clipeval.errors import ClipevalError
from clipeval.threads import ordered_map

# The largest image file read: an uncompressed image of PIL's decompression-bomb
# pixel limit (image_lmdb.MAX_IMAGE_PIXELS) takes about this much. A larger file
# is no benchmark image, and reading it whole could exhaust memory.
MAX_IMAGE_BYTES = 256 << 20


def image_in_folder(image_dir, names: list[str], where: str) -> Path:
    """image_dir/name/…, for the file names an annotation file gives; refused when they lead outside
    image_dir (an absolute name, or `..` past its top), whose files are the ones the workflow tracks by
    content."""
    parts = [part for name in names for part in PurePosixPath(name).parts]
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else part != "."
        if depth < 0 or part.startswith("/"):
            shown = str(PurePosixPath(*names))
            raise ClipevalError(f"{where}: image file {shown!r} is outside the image folder {image_dir}")
    return Path(image_dir, *parts)


def listed_image(image_dir, names: list[str], where: str) -> Path:
    """image_in_folder's file, refused with `where` (the annotation's file and entry) when it is not there."""
    path = image_in_folder(image_dir, names, where)
    if not path.exists():
        raise ClipevalError(f"{where}: image file {path} not found")
    return path


def read_image_files(files: Iterable[tuple[int, Path]], source) -> Iterator[tuple[int, bytes]]:
    """Yield (image_id, file bytes), checking that each is a regular file of bounded size that decodes. Files
    are read and decoded in the job's threads (PIL lets go of the GIL while it decodes), yielded in order."""
    return ordered_map(lambda file: (file[0], _checked_image_file(*file, source)), files)


def _checked_image_file(image_id: int, path: Path, source) -> bytes:
    try:
        status = path.stat()
    except OSError:  # missing, a dangling link, a link loop
        raise ClipevalError(f"{source}: image_id {image_id}: image file {path} not found") from None
    if not stat.S_ISREG(status.st_mode):
        raise ClipevalError(f"{source}: image_id {image_id}: image file {path} is not a regular file")
    if status.st_size > MAX_IMAGE_BYTES:
        raise ClipevalError(
            f"{path}: image_id {image_id}: {status.st_size:,} bytes, more than an image file may have"
            f" ({MAX_IMAGE_BYTES:,})"
        )
    raw = path.read_bytes()
    decode_image(raw, f"{path}: image_id {image_id}")
    return raw
