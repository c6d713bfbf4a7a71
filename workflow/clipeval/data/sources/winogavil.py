"""WinoGAViL: winogavil_dataset.csv (a row per cue: `candidates` and `associations` as JSON lists of image
names, `cue`, `ID`), with the images in one folder, NAME + image_suffix (NAME.jpg, as the WinoGAViL-experiments
repository's download-images.py saves them).

Each row is an example whose one caption, the cue, chooses as many of its
candidate images as it has associations, scored by the Jaccard index of the
chosen and the associated images (compositionality/metrics.py). The caption
is the cue as DataComp prompts it ("A bald", "An eagle": the cue lower-cased
after "A", or "An" before a vowel) unless `cue_prompt: plain`. Image ids number
the distinct candidate names in order of first appearance from 0; the
example and its caption take the row's `ID`. The groups are DataComp's: the
rows with 5 or 6 candidates ("5-6") and with 10 or 12 ("10-12"), whose mean
Jaccard score is WinoGAViL's main metric; any other count is its own group.
"""

import csv
import io
import json
from pathlib import Path

import numpy as np

from clipeval.data.captions import Captions
from clipeval.data.choices import Example, check_example
from clipeval.data.image_files import listed_image, read_image_files
from clipeval.data.sources import CHOICES, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.ids import require_id
from clipeval.storage.text import without_bom

COLUMNS = ("candidates", "cue", "associations", "ID")
GROUPS = {5: "5-6", 6: "5-6", 10: "10-12", 12: "10-12"}
VOWELS = "aeiou"


def cue_caption(cue: str, prompt: str) -> str:
    """DataComp's prompt of a cue: "An" before a vowel, "A" otherwise, the cue lower-cased; or the cue itself."""
    if prompt == "plain":
        return cue
    cue = cue.lower()
    return f"{'An' if cue[0] in VOWELS else 'A'} {cue}"


def _names(text: str, where: str, column: str) -> list[str]:
    try:
        names = json.loads(text)
    except json.JSONDecodeError:
        names = None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ClipevalError(f"{where}: {column} must be a JSON list of image names, not {text!r}")
    return [name.strip() for name in names]


def read_rows(path) -> list[tuple[str, dict]]:
    """(where, row) of each data row, the columns checked; where is FILE:LINE."""
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: file not found")
    raw = without_bom(path.read_bytes())
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ClipevalError(f"{path}:{line}: not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        missing = [column for column in COLUMNS if column not in (reader.fieldnames or ())]
        if missing:
            raise ClipevalError(f"{path}: no column {missing[0]!r} (WinoGAViL's have {', '.join(COLUMNS)})")
        rows = [(f"{path}:{reader.line_num}", row) for row in reader]
    except csv.Error as error:
        raise ClipevalError(f"{path}:{reader.line_num}: not CSV ({error})") from None
    if not rows:
        raise ClipevalError(f"{path}: no rows")
    short = [where for where, row in rows if any(row.get(column) is None for column in COLUMNS)]
    if short:
        raise ClipevalError(f"{short[0]}: fewer fields than the header's columns")
    return rows


def read(settings) -> PreparedSource:
    path, prompt = settings["examples"], settings["cue_prompt"]
    image_of, first_where, texts, text_ids, owners, examples, seen = {}, {}, [], [], [], [], set()
    for where, row in read_rows(path):
        example_id = require_id(_integer(row["ID"], where), where, "ID")
        cue = (row["cue"] or "").strip()
        if not cue:
            raise ClipevalError(f"{where}: example {example_id}: cue must be a non-empty string")
        candidates = _names(row["candidates"], where, "candidates")
        associations = _names(row["associations"], where, "associations")
        for name in candidates:
            first_where.setdefault(name, where)
            image_of.setdefault(name, len(image_of))
        unknown = [name for name in associations if name not in candidates]
        if unknown:
            raise ClipevalError(f"{where}: example {example_id}: association {unknown[0]!r} is not a candidate")
        group = GROUPS.get(len(candidates), str(len(candidates)))
        example = Example(
            example_id,
            group,
            tuple(image_of[name] for name in candidates),
            (example_id,),
            associations=tuple(image_of[name] for name in associations),
        )
        check_example(example, where)
        if example_id in seen:
            raise ClipevalError(f"{where}: example ID {example_id} appears twice")
        seen.add(example_id)
        examples.append(example)
        texts.append(cue_caption(cue, prompt))
        text_ids.append(example_id)
        owners.append(np.array(example.associations, dtype=np.int64))
    suffix = settings["image_suffix"]
    files = [
        (image_id, listed_image(settings["images"], [name + suffix], first_where[name]))
        for name, image_id in image_of.items()
    ]
    captions = Captions(np.array(text_ids, dtype=np.int64), texts, owners)
    source = {
        "format": "winogavil",
        "examples": str(path),
        "images": str(settings["images"]),
        "image_suffix": suffix,
        "cue_prompt": prompt,
    }
    return PreparedSource(read_image_files(files, path), captions, source, examples=examples)


def _integer(text, where):
    text = (text or "").strip()
    if not (text.isascii() and text.isdigit()):
        raise ClipevalError(f"{where}: ID {text!r} is not a whole number")
    return int(text)


FORMAT = SourceFormat(
    name="winogavil",
    help="WinoGAViL: winogavil_dataset.csv and its images folder (NAME.jpg)",
    writes=CHOICES,
    settings=(
        Setting("examples", "winogavil_dataset.csv", kind=FILE, type=Path, required=True),
        IMAGE_DIRECTORY,
        Setting("image_suffix", "appended to a candidate's name to name its file", default=".jpg"),
        Setting(
            "cue_prompt",
            "article: the cue as DataComp prompts it (A bald, An eagle); plain: the cue alone",
            default="article",
            choices=("article", "plain"),
        ),
    ),
    read=read,
)
