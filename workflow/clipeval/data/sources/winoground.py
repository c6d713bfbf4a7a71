"""Winoground: examples.jsonl (id, caption_0, caption_1, image_0, image_1 and tags per line) and the folder of
its images (`image_0` names a file without its suffix, ex_0_img_0 for images/ex_0_img_0.png).

Each line is an example of two images and two captions, caption_j describing
image_j. Example `id` gives the image ids 2·id and 2·id + 1 and the caption
ids likewise, so caption_0 comes first on a tie under the ranking rule. The
examples' group is the line's `collapsed_tag` (Object, Relation, Both) unless
`group_by` names another tag field. Most lines have an empty `secondary_tag`
(only the Symbolic, Series, Pragmatics and Vertical Flip examples have one):
grouped by it, they form the group NO_SECONDARY_TAG.
"""

from pathlib import Path

import numpy as np

from clipeval.data.captions import Captions
from clipeval.data.choices import Example
from clipeval.data.image_files import listed_image, read_image_files
from clipeval.data.sources import CHOICES, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.ids import ID_LIMIT
from clipeval.storage.jsonl import read_keyed_jsonl

TAG_FIELDS = ("collapsed_tag", "tag", "secondary_tag")
NO_SECONDARY_TAG = "no secondary tag"


def _text(row, field, where, example_id) -> str:
    value = row.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ClipevalError(f"{where}: example {example_id}: {field} must be a non-empty string")
    return value.strip()


def _group(row, field, where, example_id) -> str:
    if field == "secondary_tag" and row.get(field) == "":
        return NO_SECONDARY_TAG
    return _text(row, field, where, example_id)


def read(settings) -> PreparedSource:
    path, images, suffix = settings["examples"], settings["images"], settings["image_suffix"]
    files, texts, text_ids, owners, examples = [], [], [], [], []
    for where, example_id, row in read_keyed_jsonl(path, "id", duplicate="example {key} {id} appears twice"):
        if example_id >= ID_LIMIT // 2:
            raise ClipevalError(f"{where}: example id {example_id} is too large (ids are below 2^62)")
        pair = (2 * example_id, 2 * example_id + 1)
        for j, image_id in enumerate(pair):
            name = _text(row, f"image_{j}", where, example_id)
            files.append((image_id, listed_image(images, [name + suffix], f"{where}: example {example_id}")))
            texts.append(_text(row, f"caption_{j}", where, example_id))
            text_ids.append(image_id)
            owners.append(pair)
        group = _group(row, settings["group_by"], where, example_id)
        examples.append(Example(example_id, group, pair, pair))
    if not examples:
        raise ClipevalError(f"{path}: no examples")
    captions = Captions(np.array(text_ids, dtype=np.int64), texts, [np.array(o, dtype=np.int64) for o in owners])
    source = {
        "format": "winoground",
        "examples": str(path),
        "images": str(images),
        "image_suffix": suffix,
        "group_by": settings["group_by"],
    }
    return PreparedSource(read_image_files(files, path), captions, source, examples=examples)


FORMAT = SourceFormat(
    name="winoground",
    help="Winoground: examples.jsonl and its images folder",
    writes=CHOICES,
    settings=(
        Setting("examples", "examples.jsonl", kind=FILE, type=Path, required=True),
        IMAGE_DIRECTORY,
        Setting("image_suffix", "appended to image_0 and image_1 to name the file", default=".png"),
        Setting("group_by", "the tag the results are broken down by", default="collapsed_tag", choices=TAG_FIELDS),
    ),
    read=read,
)
