"""Captions (texts.jsonl): `{"text_id": 12, "text": "...", "image_ids": [3]}` per line."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.storage.ids import require_id
from clipeval.storage.jsonl import read_keyed_jsonl


@dataclass(frozen=True)
class Captions:
    text_ids: np.ndarray  # int64, in file order
    texts: list[str]
    image_ids: list[np.ndarray]  # per caption, its positive images

    def __len__(self) -> int:
        return len(self.text_ids)

    def referenced_image_ids(self) -> np.ndarray:
        return np.unique(np.concatenate(self.image_ids))


def load_captions(path) -> Captions:
    """Read and validate texts.jsonl; every problem names the file and line."""
    path = Path(path)
    text_ids, texts, image_ids = [], [], []
    for where, text_id, row in read_keyed_jsonl(path, "text_id"):
        text = row.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ClipevalError(f"{where}: text_id {text_id} has an empty or missing text")
        positives = row.get("image_ids")
        if not isinstance(positives, list) or not positives:
            raise ClipevalError(f"{where}: text_id {text_id} needs a non-empty image_ids list")
        positives = [require_id(i, f"{where}: text_id {text_id}", "image_ids entry") for i in positives]
        text_ids.append(text_id)
        texts.append(text)
        image_ids.append(np.array(sorted(set(positives)), dtype=np.int64))
    if not text_ids:
        raise ClipevalError(f"{path}: no captions")
    return Captions(np.array(text_ids, dtype=np.int64), texts, image_ids)


# The longest caption read: CLIP's text towers see 77 tokens, long-caption sets some thousands of characters.
# A longer one is no caption, and past 16 MiB texts.jsonl's reader would refuse it (storage/jsonl.py), blaming
# that file rather than the source.
MAX_CAPTION_CHARS = 1 << 20


def check_caption_lengths(captions: Captions, source_file) -> None:
    """Every caption at most MAX_CAPTION_CHARS long, or an error naming the source file and the caption's id."""
    for text_id, text in zip(captions.text_ids.tolist(), captions.texts):
        if len(text) > MAX_CAPTION_CHARS:
            raise ClipevalError(
                f"{source_file}: caption id {text_id} has {len(text):,} characters, more than the"
                f" {MAX_CAPTION_CHARS:,} a caption may have"
            )


def check_references(captions: Captions, known_image_ids: np.ndarray, texts_path) -> None:
    """Every caption must point only at images in the store."""
    flat = np.concatenate(captions.image_ids)
    owners = np.repeat(captions.text_ids, [len(ids) for ids in captions.image_ids])
    unknown = ~np.isin(flat, known_image_ids)
    if unknown.any():
        first = int(np.argmax(unknown))
        raise ClipevalError(
            f"{texts_path}: text_id {owners[first]} points to unknown image_id {flat[first]}"
            f" ({int(unknown.sum())} such references)"
        )
