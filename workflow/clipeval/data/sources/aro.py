"""ARO's Visual Genome sets (VG-Relation, VG-Attribution): visual_genome_relation.json or
visual_genome_attribution.json, a list of entries each naming an image, the box that holds the relation or
attributes, a true and a false caption, and the folder of the images.

Each entry is an example of one image, cropped to its box as ARO's own loader
crops it, and two captions. Image ids count the entries from 0; the false
caption has id 2k and the true one 2k + 1, so a tie goes to the false caption
under the ranking rule, as ARO's argmax over [false, true] gives it. The
group is the relation (`relation_name`) or the attribute pair
(`attributes`, joined by "_"). ARO reports the macro accuracy: the mean of
the groups' accuracies over the relations that are not symmetric (VG-Relation)
or over the attribute pairs with 25 examples or more (VG-Attribution); the
examples of the other groups are marked out of the macro average.
"""

import io
from pathlib import Path

import numpy as np
from PIL import Image

from clipeval.data.captions import Captions
from clipeval.data.choices import Example
from clipeval.data.image_files import listed_image, read_image_files
from clipeval.data.sources import CHOICES, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_json_value

# The relations ARO's evaluation leaves out of VG-Relation's macro accuracy (its notebook's `symmetric` list):
# swapping their subject and object leaves a caption about as true.
SYMMETRIC_RELATIONS = frozenset(
    (
        "adjusting",
        "attached to",
        "between",
        "bigger than",
        "biting",
        "boarding",
        "brushing",
        "chewing",
        "cleaning",
        "climbing",
        "close to",
        "coming from",
        "coming out of",
        "contain",
        "crossing",
        "dragging",
        "draped over",
        "drinking",
        "drinking from",
        "driving",
        "driving down",
        "driving on",
        "eating from",
        "eating in",
        "enclosing",
        "exiting",
        "facing",
        "filled with",
        "floating in",
        "floating on",
        "flying",
        "flying above",
        "flying in",
        "flying over",
        "flying through",
        "full of",
        "going down",
        "going into",
        "going through",
        "grazing in",
        "growing in",
        "growing on",
        "guiding",
        "hanging from",
        "hanging in",
        "hanging off",
        "hanging over",
        "higher than",
        "holding onto",
        "hugging",
        "in between",
        "jumping off",
        "jumping on",
        "jumping over",
        "kept in",
        "larger than",
        "leading",
        "leaning over",
        "leaving",
        "licking",
        "longer than",
        "looking in",
        "looking into",
        "looking out",
        "looking over",
        "looking through",
        "lying next to",
        "lying on top of",
        "making",
        "mixed with",
        "mounted on",
        "moving",
        "on the back of",
        "on the edge of",
        "on the front of",
        "on the other side of",
        "opening",
        "painted on",
        "parked at",
        "parked beside",
        "parked by",
        "parked in",
        "parked in front of",
        "parked near",
        "parked next to",
        "perched on",
        "petting",
        "piled on",
        "playing",
        "playing in",
        "playing on",
        "playing with",
        "pouring",
        "reaching for",
        "reading",
        "reflected on",
        "riding on",
        "running in",
        "running on",
        "running through",
        "seen through",
        "sitting behind",
        "sitting beside",
        "sitting by",
        "sitting in front of",
        "sitting near",
        "sitting next to",
        "sitting under",
        "skiing down",
        "skiing on",
        "sleeping in",
        "sleeping on",
        "smiling at",
        "sniffing",
        "splashing",
        "sprinkled on",
        "stacked on",
        "standing against",
        "standing around",
        "standing behind",
        "standing beside",
        "standing in front of",
        "standing near",
        "standing next to",
        "staring at",
        "stuck in",
        "surrounding",
        "swimming in",
        "swinging",
        "talking to",
        "topped with",
        "touching",
        "traveling down",
        "traveling on",
        "tying",
        "typing on",
        "underneath",
        "wading in",
        "waiting for",
        "walking across",
        "walking by",
        "walking down",
        "walking next to",
        "walking through",
        "working in",
        "working on",
        "worn on",
        "wrapped around",
        "wrapped in",
        "by",
        "of",
        "near",
        "next to",
        "with",
        "beside",
        "on the side of",
        "around",
    )
)
# The attribute pairs with fewer examples are left out of VG-Attribution's macro accuracy.
MIN_ATTRIBUTE_PAIR_EXAMPLES = 25
BOX = ("bbox_x", "bbox_y", "bbox_w", "bbox_h")


def _text(entry, field, where) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ClipevalError(f"{where}: {field} must be a non-empty string")
    return value.strip()


def _group(entry, where) -> tuple[str, str]:
    """(kind, group): ("relation", the relation) or ("attribution", the attribute pair)."""
    if "relation_name" in entry:
        return "relation", _text(entry, "relation_name", where)
    pair = entry.get("attributes")
    if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(a, str) and a.strip() for a in pair):
        raise ClipevalError(f"{where}: needs relation_name, or attributes as a list of two names")
    return "attribution", "_".join(a.strip() for a in pair)


def _box(entry, where) -> tuple[tuple, tuple[int, int, int, int]]:
    """(the box as given, (left, upper, right, lower) as ARO's loader crops it): its loader hands PIL's crop
    (x, y, x + w, y + h) in the file's numbers, and PIL rounds each edge (Python's round, to even on a half)."""
    values = [entry.get(field) for field in BOX]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v) for v in values):
        raise ClipevalError(f"{where}: {', '.join(BOX)} must be numbers")
    x, y, w, h = values
    left, upper, right, lower = (int(round(edge)) for edge in (x, y, x + w, y + h))
    if left < 0 or upper < 0 or right <= left or lower <= upper:
        raise ClipevalError(f"{where}: the box ({x}, {y}, {w}, {h}) is empty or outside the image")
    return (x, y, w, h), (left, upper, right, lower)


def cropped(images, boxes, where):
    """(image_id, PNG bytes of the image cropped to its box), as ARO's loader crops it (PIL's crop)."""
    for (image_id, raw), (given, edges) in zip(images, boxes):
        with Image.open(io.BytesIO(raw)) as image:
            image = image.convert("RGB")
            if edges[2] > image.width or edges[3] > image.height:
                raise ClipevalError(
                    f"{where[image_id]}: the box ({', '.join(map(str, given))}) is outside the image"
                    f" ({image.width}×{image.height})"
                )
            buffer = io.BytesIO()
            image.crop(edges).save(buffer, format="PNG")
        yield image_id, buffer.getvalue()


def read(settings) -> PreparedSource:
    path = settings["annotations"]
    entries = read_json_value(path)
    if not isinstance(entries, list) or not entries:
        raise ClipevalError(f"{path}: expected a non-empty list of entries")
    files, boxes, where_of, texts, owners, examples, kinds = [], [], {}, [], [], [], set()
    for index, entry in enumerate(entries):
        where = f"{path}: entry {index}"
        if not isinstance(entry, dict):
            raise ClipevalError(f"{where}: expected an object")
        kind, group = _group(entry, where)
        kinds.add(kind)
        boxes.append(_box(entry, where))
        files.append((index, listed_image(settings["images"], [_text(entry, "image_path", where)], where)))
        where_of[index] = where
        texts += [_text(entry, "false_caption", where), _text(entry, "true_caption", where)]
        owners += [index, index]
        examples.append([index, group, (index,), (2 * index + 1, 2 * index)])
    if len(kinds) > 1:
        raise ClipevalError(
            f"{path}: mixes relation entries and attribute entries; give VG-Relation and VG-Attribution as two datasets"
        )
    counts = {}
    for _, group, _, _ in examples:
        counts[group] = counts.get(group, 0) + 1
    if kinds == {"relation"}:
        in_macro = {group: group not in SYMMETRIC_RELATIONS for group in counts}
    else:
        in_macro = {group: count >= MIN_ATTRIBUTE_PAIR_EXAMPLES for group, count in counts.items()}
    captions = Captions(np.arange(len(texts), dtype=np.int64), texts, [np.array([o], dtype=np.int64) for o in owners])
    source = {"format": "aro", "annotations": str(path), "images": str(settings["images"])}
    images = cropped(read_image_files(files, path), boxes, where_of)
    chosen = [Example(i, group, images_, texts_, in_macro[group]) for i, group, images_, texts_ in examples]
    return PreparedSource(images, captions, source, examples=chosen)


FORMAT = SourceFormat(
    name="aro",
    help="ARO's VG-Relation or VG-Attribution: its annotation file and the Visual Genome images",
    writes=CHOICES,
    settings=(
        Setting(
            "annotations",
            "visual_genome_relation.json or visual_genome_attribution.json",
            kind=FILE,
            type=Path,
            required=True,
        ),
        IMAGE_DIRECTORY,
    ),
    read=read,
)
