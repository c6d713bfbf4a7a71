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
from collections.abc import Iterator
from pathlib import Path

from clipeval.data.image_files import MAX_IMAGE_BYTES
from clipeval.errors import ClipevalError

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
    """(where, image bytes, the `wanted` member's bytes) per sample, shards in order, members in tar order."""
    for shard in shards:
        try:
            with tarfile.open(shard, "r:") as archive:
                grouped = {}
                for member in archive:
                    if not member.isfile():
                        continue
                    key, dot, extension = member.name.rpartition(".")
                    if not dot or not key:
                        raise ClipevalError(f"{shard}: member {member.name!r} is not KEY.EXTENSION")
                    if member.size > MAX_IMAGE_BYTES:
                        raise ClipevalError(f"{shard}: member {member.name!r} is larger than a sample's file may be")
                    grouped.setdefault(key, {})[extension.lower()] = archive.extractfile(member).read()
        except (tarfile.TarError, EOFError, OSError) as error:
            raise ClipevalError(f"{shard}: not a readable tar file ({error})") from None
        for key, files in grouped.items():
            where = f"{shard}: sample {key}"
            images = [extension for extension in IMAGE_EXTENSIONS if extension in files]
            if len(images) != 1:
                raise ClipevalError(f"{where}: needs one image ({', '.join(IMAGE_EXTENSIONS)}), has {len(images)}")
            if wanted not in files:
                raise ClipevalError(f"{where}: has no .{wanted}")
            yield where, files[images[0]], files[wanted]


def text_of(raw: bytes, where: str, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ClipevalError(f"{where}: its .{what} is not UTF-8 text") from None
