"""Karpathy split files: dataset_flickr30k.json, dataset_coco.json (images with their sentences)."""

from pathlib import Path

from clipeval.data.captions import Captions
from clipeval.data.sources.annotation_json import CaptionCollector, list_field
from clipeval.errors import ClipevalError
from clipeval.storage.ids import require_id
from clipeval.storage.jsonl import read_json

KARPATHY_SPLITS = ("train", "restval", "val", "test")


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
    collector = CaptionCollector(path)
    for index, image in enumerate(list_field(read_json(path), "images", path)):
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
