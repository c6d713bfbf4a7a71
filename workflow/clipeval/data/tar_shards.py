"""Webdataset shards as CLIP_benchmark exports its evaluation sets (clip_benchmark_export_wds): ROOT/SPLIT/0.tar,
1.tar, …, each sample the members KEY.EXT of one key (an image as webp, png or jpg; `txt`: its captions one per
line; `cls`: its class index), and beside the split ROOT/classnames.txt and
ROOT/zeroshot_classification_templates.txt for classification sets.

Read with the standard library's tarfile rather than the webdataset package:
the importer needs the samples once, in a fixed order (shards by number,
members in tar order), and the workflow tracks the shards by content as
files of the folder; webdataset's streaming, shuffling and decoding serve
training, not this.
"""

import re
import tarfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from clipeval.data.image_files import MAX_IMAGE_BYTES
from clipeval.errors import ClipevalError
from clipeval.storage.text import without_bom

IMAGE_EXTENSIONS = ("webp", "png", "jpg", "jpeg")
SHARD = re.compile(r"(\d+)\.tar")


def shard_files(root, split: str) -> list[Path]:
    """ROOT/SPLIT's shards, in the order of their numbers."""
    folder = Path(root) / split
    if not folder.is_dir():
        raise ClipevalError(f"{folder}: split folder not found (an export has ROOT/SPLIT/0.tar …)")
    shards = sorted((int(m.group(1)), path) for path in folder.iterdir() if (m := SHARD.fullmatch(path.name)))
    if not shards:
        raise ClipevalError(f"{folder}: no shards (0.tar, 1.tar, …)")
    return [path for _, path in shards]


def samples(shards: list[Path], wanted: str) -> Iterator[tuple[str, bytes, bytes]]:
    """(where, image bytes, the `wanted` member's bytes) per sample, shards in order, members in tar order.
    Nothing is passed over in silence: a sample's members come together (as webdataset groups them), each
    KEY.EXTENSION once, whatever its case; a member is a regular file (a link is refused, a folder holds no
    data); and the archive ends in tar's end marker, with nothing after it."""
    for where, image, members, _ in samples_with(shards, (wanted,)):
        yield where, image, members[0]


def samples_with(shards: list[Path], wanted: tuple[str, ...]) -> Iterator[tuple[str, bytes, list[bytes], set[str]]]:
    """(where, image bytes, the bytes of each `wanted` member in order, the extensions of all its members) per
    sample, as `samples` reads them."""
    for shard in shards:
        try:
            with tarfile.open(shard, "r:") as archive:
                grouped = _grouped_members(shard, archive)
                _check_archive_end(shard, archive.offset)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise ClipevalError(f"{shard}: not a readable tar file ({error})") from None
        for key, files in grouped.items():
            where = f"{shard}: sample {key}"
            images = [extension for extension in IMAGE_EXTENSIONS if extension in files]
            if len(images) != 1:
                raise ClipevalError(f"{where}: needs one image ({', '.join(IMAGE_EXTENSIONS)}), has {len(images)}")
            for extension in wanted:
                if extension not in files:
                    raise ClipevalError(f"{where}: has no .{extension}")
            yield where, files[images[0]], [files[extension] for extension in wanted], set(files)


def _grouped_members(shard: Path, archive) -> dict[str, dict[str, bytes]]:
    """{key: {lower-case extension: bytes}} of the archive's members, in tar order."""
    grouped, last_key = {}, None
    for member in archive:
        if member.isdir():
            continue
        if not member.isfile():
            raise ClipevalError(f"{shard}: member {member.name!r} is a link or a special file, not a sample's file")
        if member.issparse():  # its bytes are mostly not in the file: a few KB can stand for gigabytes
            raise ClipevalError(f"{shard}: member {member.name!r} is a sparse file, not a sample's file")
        if any(unicodedata.category(char) == "Cc" for char in member.name):  # a newline would forge message lines
            raise ClipevalError(f"{shard}: member {member.name!r} has a control character in its name")
        key, dot, extension = member.name.rpartition(".")
        if not dot or not key:
            raise ClipevalError(f"{shard}: member {member.name!r} is not KEY.EXTENSION")
        if member.size > MAX_IMAGE_BYTES:
            raise ClipevalError(f"{shard}: member {member.name!r} is larger than a sample's file may be")
        if key != last_key and key in grouped:
            raise ClipevalError(f"{shard}: member {member.name!r}: sample {key}'s members are not together")
        files = grouped.setdefault(key, {})
        if extension.lower() in files:
            raise ClipevalError(f"{shard}: member {member.name!r}: sample {key} has a .{extension.lower()} already")
        files[extension.lower()] = archive.extractfile(member).read()
        last_key = key
    return grouped


# tar's end marker: two blocks of zeros, then zeros to the end of the last record.
END_MARKER_BYTES = 2 * tarfile.BLOCKSIZE


def _check_archive_end(shard: Path, end: int) -> None:
    """Refuse an archive that stops without its end marker (cut short) or has data after it (tars joined with
    cat, or a damaged header): tarfile stops reading there without a word."""
    with open(shard, "rb") as handle:
        handle.seek(end)
        zeros = 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            if block.count(0) != len(block):
                at = end + zeros + next(index for index, byte in enumerate(block) if byte)
                raise ClipevalError(
                    f"{shard}: data at byte {at:,} after the archive's last member is not read (two tars joined, or"
                    " a damaged member header): give each tar as a shard of its own"
                )
            zeros += len(block)
    if zeros < END_MARKER_BYTES:
        raise ClipevalError(f"{shard}: the archive has no end marker after its last member: was it cut short?")


def text_of(raw: bytes, where: str, what: str) -> str:
    try:
        return without_bom(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ClipevalError(f"{where}: its .{what} is not UTF-8 text") from None
