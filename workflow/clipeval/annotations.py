"""Caption annotation files in the layouts benchmarks ship: Karpathy splits and COCO captions."""

from pathlib import Path

import numpy as np

from .captions import Captions
from .errors import ClipevalError
from .ids import require_id
from .jsonl import read_json

KARPATHY_SPLITS = ("train", "restval", "val", "test")


def _list_field(data, field, path) -> list:
    value = data.get(field)
    if not isinstance(value, list):
        raise ClipevalError(f"{path}: expected a list under {field!r}")
    return value


class _CaptionCollector:
    """Captions with unique ids and non-empty text, each naming one image."""

    def __init__(self, path):
        self.path = path
        self.text_ids, self.texts, self.image_ids = [], [], []
        self._seen = set()

    def add(self, text_id, text, image_id, where):
        text_id = require_id(text_id, where, "caption id")
        if text_id in self._seen:
            raise ClipevalError(f"{where}: duplicate caption id {text_id}")
        self._seen.add(text_id)
        if not isinstance(text, str) or not text.strip():
            raise ClipevalError(f"{where}: caption id {text_id} has an empty caption")
        self.text_ids.append(text_id)
        self.texts.append(text.strip())
        self.image_ids.append(np.array([image_id], dtype=np.int64))

    def captions(self) -> Captions:
        if not self.text_ids:
            raise ClipevalError(f"{self.path}: no captions in the selection")
        return Captions(np.array(self.text_ids, dtype=np.int64), self.texts, self.image_ids)


def karpathy_split(annotations, image_dir, splits, id_field=None) -> tuple[list[tuple[int, Path]], Captions]:
    """Images and captions of the chosen Karpathy split(s).

    Image ids are COCO ids where the file has them (`cocoid`), else Karpathy's
    `imgid`, unless id_field names one. `imgid` counts up in file order, so
    ascending ids keep the split's order (COCO-1K folds depend on it).
    Caption ids are `sentid`. Files live at image_dir/[filepath/]filename.
    """
    path = Path(annotations)
    unknown = set(splits) - set(KARPATHY_SPLITS)
    if unknown:
        raise ClipevalError(f"unknown Karpathy split(s) {sorted(unknown)} (choose from {', '.join(KARPATHY_SPLITS)})")
    files, seen_images = [], set()
    collector = _CaptionCollector(path)
    for index, image in enumerate(_list_field(read_json(path), "images", path)):
        where = f"{path}: images[{index}]"
        if not isinstance(image, dict) or image.get("split") not in splits:
            continue
        raw_id = image.get(id_field) if id_field else image.get("cocoid", image.get("imgid"))
        image_id = require_id(raw_id, where, f"image id ({id_field or 'cocoid/imgid'})")
        if image_id in seen_images:
            raise ClipevalError(f"{where}: duplicate image id {image_id}")
        seen_images.add(image_id)
        filename = image.get("filename")
        if not isinstance(filename, str) or not filename:
            raise ClipevalError(f"{where}: image id {image_id} has no filename")
        files.append((image_id, Path(image_dir) / image.get("filepath", "") / filename))
        sentences = image.get("sentences", [])
        if not isinstance(sentences, list) or not all(isinstance(s, dict) for s in sentences):
            raise ClipevalError(f"{where}: image id {image_id}: sentences must be a list of objects")
        for sentence in sentences:
            collector.add(sentence.get("sentid"), sentence.get("raw"), image_id, f"{where} image id {image_id}")
    if not files:
        raise ClipevalError(f"{path}: no images in split(s) {', '.join(splits)}")
    return files, collector.captions()


def coco_captions(annotations, image_dir, only_image_ids=None) -> tuple[list[tuple[int, Path]], Captions]:
    """Images and captions of a COCO captions file, optionally restricted to some image ids."""
    path = Path(annotations)
    data = read_json(path)
    files = {}
    for index, image in enumerate(_list_field(data, "images", path)):
        where = f"{path}: images[{index}]"
        image_id = require_id(image.get("id") if isinstance(image, dict) else None, where, "image id")
        if image_id in files:
            raise ClipevalError(f"{where}: duplicate image id {image_id}")
        if not isinstance(image.get("file_name"), str):
            raise ClipevalError(f"{where}: image id {image_id} has no file_name")
        files[image_id] = Path(image_dir) / image["file_name"]
    if only_image_ids is not None:
        missing = sorted(set(only_image_ids) - set(files))
        if missing:
            raise ClipevalError(f"image id {missing[0]} of the selection is not in {path}")
        files = {image_id: files[image_id] for image_id in only_image_ids}
    collector = _CaptionCollector(path)
    for index, note in enumerate(_list_field(data, "annotations", path)):
        where = f"{path}: annotations[{index}]"
        if not isinstance(note, dict):
            raise ClipevalError(f"{where}: expected an object")
        image_id = require_id(note.get("image_id"), where, "image_id")
        if image_id not in files:
            if only_image_ids is None:
                raise ClipevalError(f"{where}: caption id {note.get('id')} points to unknown image id {image_id}")
            continue
        collector.add(note.get("id"), note.get("caption"), image_id, where)
    return sorted(files.items()), collector.captions()


def read_id_list(path) -> list[int]:
    """Image ids, one per line (blank lines ignored)."""
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: file not found")
    ids = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            try:
                ids.append(require_id(int(line.strip()), f"{path}:{number}", "image id"))
            except ValueError:
                raise ClipevalError(f"{path}:{number}: image id {line.strip()!r} is not an integer") from None
    if len(set(ids)) != len(ids):
        raise ClipevalError(f"{path}: image ids repeat")
    return ids
