"""Karpathy split files: dataset_flickr30k.json, dataset_coco.json (images with their sentences)."""

from pathlib import Path

from clipeval.data.annotation_json import CaptionCollector, list_field
from clipeval.data.captions import Captions
from clipeval.data.image_files import image_in_folder, read_image_files
from clipeval.data.sources import CAPTIONS, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
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
        filepath = image.get("filepath", "")
        if not isinstance(filepath, str):
            raise ClipevalError(f"{where}: image id {image_id} has a filepath that is not a string: {filepath!r}")
        files.append((image_id, image_in_folder(image_dir, [filepath, filename], f"{where}: image id {image_id}")))
        sentences = image.get("sentences", [])
        if not isinstance(sentences, list) or not all(isinstance(s, dict) for s in sentences):
            raise ClipevalError(f"{where}: image id {image_id}: sentences must be a list of objects")
        for sentence in sentences:
            collector.add(sentence.get("sentid"), sentence.get("raw"), image_id, f"{where} image id {image_id}")
    if not files:
        raise ClipevalError(f"{path}: no images in split(s) {', '.join(splits)}")
    return files, collector.captions()


def read(settings) -> PreparedSource:
    files, captions = karpathy_split(
        settings["annotations"], settings["images"], settings["split"], settings["image_id"]
    )
    source = {
        "format": "karpathy",
        "annotations": str(settings["annotations"]),
        "images": str(settings["images"]),
        "split": settings["split"],
        "image_id": settings["image_id"],
    }
    return PreparedSource(read_image_files(files, settings["annotations"]), captions, source)


FORMAT = SourceFormat(
    name="karpathy",
    help="a Karpathy split (dataset_flickr30k.json, dataset_coco.json)",
    writes=CAPTIONS,
    settings=(
        Setting("annotations", "the Karpathy split JSON", kind=FILE, type=Path, required=True),
        IMAGE_DIRECTORY,
        Setting("split", "train, restval, val and/or test (default: test)", default=["test"], many=True),
        Setting("image_id", "id field (default: cocoid where present)", choices=("cocoid", "imgid")),
    ),
    read=read,
)
