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
