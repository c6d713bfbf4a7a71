"""A prepared dataset directory: images.lmdb + texts.jsonl + meta.json (and labels or compositionality
examples)."""

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from clipeval.data.captions import Captions, check_caption_lengths, check_references, load_captions
from clipeval.data.choices import check_example_references, write_examples
from clipeval.data.image_lmdb import ImageStore, write_image_store
from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output, is_partial_of
from clipeval.storage.jsonl import write_json, write_jsonl


class _ChecksummedImages:
    """Pass images through while remembering a digest per id."""

    def __init__(self, images: Iterable[tuple[int, bytes]]):
        self._images = images
        self.digests: dict[int, bytes] = {}

    def __iter__(self):
        for image_id, raw in self._images:
            self.digests[image_id] = hashlib.sha256(raw).digest()
            yield image_id, raw


def content_checksum(image_digests: dict[int, bytes], *files) -> str:
    """sha256 over the images in id order and the annotation files: stable across runs."""
    total = hashlib.sha256()
    for image_id in sorted(image_digests):
        total.update(f"{image_id}:".encode())
        total.update(image_digests[image_id])
    for path in files:
        total.update(Path(path).read_bytes())
    return "sha256:" + total.hexdigest()


def caption_rows(captions: Captions) -> Iterable[dict]:
    for text_id, text, image_ids in zip(captions.text_ids, captions.texts, captions.image_ids):
        yield {"text_id": int(text_id), "text": text, "image_ids": image_ids.tolist()}


def write_class_files(out_dir, labels: list[tuple], classnames: list[str], templates: list[str]) -> list[Path]:
    """labels.jsonl and classes.json, for datasets that carry classification labels: (image_id, label) pairs, or
    (image_id, label, {field: group}) where images belong to groups; a multi-label set's label is the list of
    every class the image holds."""
    out_dir = Path(out_dir)

    def row(image_id, label, *groups):
        key = "labels" if isinstance(label, list) else "label"
        return {"image_id": image_id, key: label, **({"groups": groups[0]} if groups else {})}

    rows = (row(*entry) for entry in labels)
    write_jsonl(out_dir / "labels.jsonl", rows)
    write_json(out_dir / "classes.json", {"classnames": classnames, "templates": templates})
    return [out_dir / "labels.jsonl", out_dir / "classes.json"]


def write_texts_and_meta(
    out_dir,
    captions: Captions | None,
    image_ids: np.ndarray,
    image_digests: dict[int, bytes],
    source: dict,
    extra_files=(),
) -> dict:
    """Write texts.jsonl (when there are captions) and meta.json for images already in place; return meta."""
    out_dir = Path(out_dir)
    counts = {"images": int(len(image_ids))}
    caption_files = []
    if captions is not None:
        texts_path = out_dir / "texts.jsonl"
        write_jsonl(texts_path, caption_rows(captions))
        captioned = np.isin(image_ids, captions.referenced_image_ids())
        counts.update(texts=int(len(captions)), images_without_caption=int((~captioned).sum()))
        caption_files = [texts_path]
    meta = {
        "counts": counts,
        "checksum": content_checksum(image_digests, *caption_files, *extra_files),
        "source": source,
    }
    write_json(out_dir / "meta.json", meta)
    return meta


# What a prepared dataset directory may hold; write_dataset replaces such a directory whole.
DATASET_ENTRIES = ("images.lmdb", "texts.jsonl", "labels.jsonl", "classes.json", "examples.jsonl", "meta.json")


def write_dataset(out_dir, prepared) -> dict:
    """Write a whole prepared dataset (a data.sources.PreparedSource) and return its meta.

    The dataset is written beside `out_dir` and renamed into place when
    complete: a failed or killed import leaves the previous dataset there as
    it was, or no folder. A folder holding anything else is refused, so a
    mistyped --out never replaces someone's files.

    Not imported from data.sources: every stage reads datasets through this
    module, and the format registry is not part of their code.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ClipevalError(f"{out_dir}: not a folder")
    entries = sorted(entry.name for entry in out_dir.iterdir()) if out_dir.exists() else []
    foreign = [name for name in entries if not _is_dataset_entry(name)]
    if foreign:
        raise ClipevalError(
            f"{out_dir}: holds {foreign[0]!r}, which is not part of a prepared dataset: write to a new or empty folder"
        )
    with atomic_output(out_dir) as staging:
        staging.mkdir()
        return _write_into(staging, out_dir, prepared)


def _is_dataset_entry(name: str) -> bool:
    """A dataset file, or what a killed writer of one left beside it."""
    return name in DATASET_ENTRIES or any(is_partial_of(name, entry) for entry in DATASET_ENTRIES)


def _write_into(staging: Path, out_dir: Path, prepared) -> dict:
    checksummed = _ChecksummedImages(prepared.images)
    write_image_store(staging / "images.lmdb", checksummed, shown_as=out_dir / "images.lmdb")
    image_ids = np.array(sorted(checksummed.digests), dtype=np.int64)
    if not len(image_ids):
        raise ClipevalError(f"{prepared.source.get('images', out_dir)}: the dataset has no images")
    if prepared.captions is not None:
        check_caption_lengths(prepared.captions, source_file(prepared.source, out_dir))
        check_references(prepared.captions, image_ids, source_file(prepared.source, out_dir))
    extra_files = write_class_files(staging, *prepared.classes) if prepared.classes else []
    if prepared.examples is not None:
        examples_path = out_dir / "examples.jsonl"
        check_example_references(prepared.examples, image_ids, prepared.captions.text_ids, examples_path)
        write_examples(staging / "examples.jsonl", prepared.examples)
        extra_files.append(staging / "examples.jsonl")
    return write_texts_and_meta(
        staging, prepared.captions, image_ids, checksummed.digests, prepared.source, extra_files
    )


# The keys of a source's record that name the file its captions come from, most specific first.
CAPTION_SOURCE_KEYS = ("texts", "annotations", "examples", "shards", "export", "captions")


def source_file(source: dict, out_dir: Path):
    """The file or folder a prepared source's captions were read from, for messages; else the dataset's own."""
    return next((source[key] for key in CAPTION_SOURCE_KEYS if key in source), out_dir / "texts.jsonl")


def open_dataset(dataset_dir) -> tuple[ImageStore, Captions]:
    dataset_dir = Path(dataset_dir)
    return ImageStore(dataset_dir / "images.lmdb"), load_captions(dataset_dir / "texts.jsonl")
