"""SugarCrepe: a folder of split files (add_att.json, replace_rel.json, …), each mapping an id to the COCO
val2017 image file, its caption and a negative caption, with the images in one folder.

Each entry is an example of one image and two captions, the caption first.
Splits are the files' names (their stem) and are the examples' groups, in
file-name order unless `splits` picks some. Image ids number the distinct
file names in sorted order from 0; caption ids are 2k (the caption) and
2k + 1 (the negative) for the k-th entry over the splits in order, so a tie
goes to the caption under the ranking rule, as CLIP_benchmark's argmax gives it.
"""

from pathlib import Path

import numpy as np

from clipeval.data.captions import Captions
from clipeval.data.choices import Example
from clipeval.data.image_files import listed_image, read_image_files
from clipeval.data.sources import CHOICES, FOLDER, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_json

FIELDS = ("filename", "caption", "negative_caption")


def split_files(folder, splits) -> list[Path]:
    """The split files to read, in order: those `splits` names, or every .json file in the folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClipevalError(f"{folder}: annotation folder not found")
    available = {path.stem: path for path in sorted(folder.glob("*.json"))}
    if not available:
        raise ClipevalError(f"{folder}: no split files (*.json)")
    if not splits:
        return list(available.values())
    unknown = [split for split in splits if split not in available]
    if unknown:
        raise ClipevalError(f"{folder}: no split {unknown[0]!r} (found: {', '.join(available)})")
    return [available[split] for split in splits]


def split_entries(path) -> list[tuple[str, dict]]:
    """(where, entry) of one split file, in file order, each entry's fields checked."""
    entries = []
    for key, entry in read_json(path).items():
        where = f"{path}: entry {key!r}"
        if not isinstance(entry, dict):
            raise ClipevalError(f"{where}: expected an object with {', '.join(FIELDS)}")
        for field in FIELDS:
            value = entry.get(field)
            if not isinstance(value, str) or not value.strip():
                raise ClipevalError(f"{where}: {field} must be a non-empty string")
        entries.append((where, entry))
    if not entries:
        raise ClipevalError(f"{path}: no entries")
    return entries


def read(settings) -> PreparedSource:
    files = split_files(settings["annotations"], settings["splits"])
    entries = [(path.stem, where, entry) for path in files for where, entry in split_entries(path)]
    image_of = {name: image_id for image_id, name in enumerate(sorted({entry["filename"] for _, _, entry in entries}))}
    first_where = {}
    for _, where, entry in entries:
        first_where.setdefault(entry["filename"], where)
    image_files = [
        (image_id, listed_image(settings["images"], [name], first_where[name])) for name, image_id in image_of.items()
    ]
    texts, owners, examples = [], [], []
    for index, (split, _, entry) in enumerate(entries):
        image_id = image_of[entry["filename"]]
        texts += [entry["caption"].strip(), entry["negative_caption"].strip()]
        owners += [image_id, image_id]
        examples.append(Example(index, split, (image_id,), (2 * index, 2 * index + 1)))
    captions = Captions(
        np.arange(len(texts), dtype=np.int64), texts, [np.array([owner], dtype=np.int64) for owner in owners]
    )
    source = {
        "format": "sugarcrepe",
        "annotations": str(settings["annotations"]),
        "images": str(settings["images"]),
        "splits": [path.stem for path in files],
    }
    return PreparedSource(read_image_files(image_files, settings["annotations"]), captions, source, examples=examples)


FORMAT = SourceFormat(
    name="sugarcrepe",
    help="SugarCrepe: a folder of split files (add_att.json …) and the COCO val2017 images",
    writes=CHOICES,
    settings=(
        Setting("annotations", "the folder of split files (add_att.json, …)", kind=FOLDER, type=Path, required=True),
        IMAGE_DIRECTORY,
        Setting("splits", "the splits to read, by file name without .json (default: every file)", many=True),
    ),
    read=read,
)
