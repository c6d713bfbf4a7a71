"""COCO caption files (captions_val2017.json) and image-id lists that select from them."""

from pathlib import Path

from clipeval.data.annotation_json import CaptionCollector, list_field
from clipeval.data.captions import Captions
from clipeval.data.image_files import image_in_folder, read_image_files
from clipeval.data.sources import CAPTIONS, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.ids import require_id
from clipeval.storage.jsonl import read_json
from clipeval.storage.text import without_bom


def coco_captions(annotations, image_dir, only_image_ids=None) -> tuple[list[tuple[int, Path]], Captions]:
    """Images and captions of a COCO captions file, optionally restricted to some image ids."""
    path = Path(annotations)
    data = read_json(path)
    files = {}
    for index, image in enumerate(list_field(data, "images", path)):
        where = f"{path}: images[{index}]"
        image_id = require_id(image.get("id") if isinstance(image, dict) else None, where, "image id")
        if image_id in files:
            raise ClipevalError(f"{where}: duplicate image id {image_id}")
        if not isinstance(image.get("file_name"), str):
            raise ClipevalError(f"{where}: image id {image_id} has no file_name")
        files[image_id] = image_in_folder(image_dir, [image["file_name"]], f"{where}: image id {image_id}")
    if only_image_ids is not None:
        missing = sorted(set(only_image_ids) - set(files))
        if missing:
            raise ClipevalError(f"image id {missing[0]} of the selection is not in {path}")
        files = {image_id: files[image_id] for image_id in only_image_ids}
    collector = CaptionCollector(path)
    for index, note in enumerate(list_field(data, "annotations", path)):
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
    try:
        text = without_bom(path.read_bytes()).decode("utf-8")
    except UnicodeDecodeError:
        raise ClipevalError(f"{path}: not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                ids.append(require_id(int(line.strip()), f"{path}:{number}", "image id"))
            except ValueError:
                raise ClipevalError(f"{path}:{number}: image id {line.strip()!r} is not an integer") from None
    if len(set(ids)) != len(ids):
        raise ClipevalError(f"{path}: image ids repeat")
    return ids


def read(settings) -> PreparedSource:
    only = read_id_list(settings["image_ids"]) if settings["image_ids"] else None
    files, captions = coco_captions(settings["annotations"], settings["images"], only)
    source = {
        "format": "coco",
        "annotations": str(settings["annotations"]),
        "images": str(settings["images"]),
        "image_ids": str(settings["image_ids"]) if settings["image_ids"] else None,
    }
    return PreparedSource(read_image_files(files, settings["annotations"]), captions, source)


FORMAT = SourceFormat(
    name="coco",
    help="a COCO captions file (captions_val2017.json …)",
    writes=CAPTIONS,
    settings=(
        Setting("annotations", "the captions JSON", kind=FILE, type=Path, required=True),
        IMAGE_DIRECTORY,
        Setting("image_ids", "keep only these image ids (one per line)", kind=FILE, type=Path),
    ),
    read=read,
)
