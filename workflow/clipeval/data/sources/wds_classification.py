"""A classification set in CLIP_benchmark's webdataset export (data/tar_shards.py): each sample an image and
its class index (`cls`), with ROOT/classnames.txt (a class per line, in index order) and
ROOT/zeroshot_classification_templates.txt (a template per line, `{c}` standing for the class name) beside
the split.

DataComp's fairness and geography sets (Dollar Street, GeoDE) add to each
sample a `npy`, a vector of integers: the groups it belongs to, one field a
column (Dollar Street: income_ds, income_meta, region). `groups:` names the
columns, and each image's groups go to labels.jsonl, for scores by group.

A multi-label set (Pascal VOC 2007's, `voc2007_multilabel`) says so in
ROOT/dataset_type.txt (`multilabel`), and each sample's `npy` is then a 0/1
vector, one per class: the classes it holds, scored by mean average precision
(classification/multilabel.py).

DataComp's FairFace and UTKFace exports list every head's class names and
templates in one file, each line prefixed by its head (`race:`, `gender:`,
`age:`, `toxic:`), and give each sample no `cls` but a `npy` of its age,
gender, race and race_binary. `objective:` names the head a dataset scores:
its lines, and its column of the `npy` as each image's class.

Image ids count the samples from 0 in shard and tar order.
"""

import io
import sys
from pathlib import Path

import numpy as np

from clipeval.data.image_lmdb import decode_image
from clipeval.data.sources import CLASSES, PreparedSource, Setting, SourceFormat
from clipeval.data.sources.wds_retrieval import EXPORT, SPLIT
from clipeval.data.tar_shards import samples_with, shard_files, text_of
from clipeval.data.text_lists import nonblank_lines
from clipeval.errors import ClipevalError, first_line

CLASSNAMES, TEMPLATES = "classnames.txt", "zeroshot_classification_templates.txt"
DATASET_TYPE = "dataset_type.txt"
GROUPS = Setting(
    "groups",
    "names of the columns of each sample's .npy, the groups it belongs to (Dollar Street: income_ds income_meta"
    " region), scored by group",
    many=True,
)
OBJECTIVE = Setting(
    "objective",
    "DataComp's FairFace and UTKFace: the head scored (race, gender or age), whose class names and templates are"
    " the lines prefixed NAME: and whose class is each sample's .npy column NAME (groups: names the columns)",
)


def objective_lines(path, what: str, objective: str | None) -> list[tuple[int, str]]:
    """(line number, text) of `path`'s nonblank lines; with an objective, those prefixed `OBJECTIVE:`, the prefix
    taken off (DataComp's FairFace and UTKFace list the classes and templates of every head in one file)."""
    lines = [(number, line.strip()) for number, line in nonblank_lines(path, what)]
    if objective is None:
        return lines
    prefix = f"{objective}:"
    return [(number, line[len(prefix) :].strip()) for number, line in lines if line.startswith(prefix)]


def export_templates(path, objective: str | None = None) -> list[str]:
    """CLIP_benchmark's templates, `{c}` for the class name, as clipeval's (`{}`)."""
    templates = []
    for number, line in objective_lines(path, "templates", objective):
        if "{c}" not in line:
            raise ClipevalError(f"{path}:{number}: template {line!r} has no {{c}} for the class name")
        templates.append(line.replace("{", "{{").replace("}", "}}").replace("{{c}}", "{}"))
    return templates


def is_multilabel_export(root: Path) -> bool:
    """CLIP_benchmark writes ROOT/dataset_type.txt, holding `multilabel`, beside a multi-label set's classnames."""
    marker = root / DATASET_TYPE
    return marker.is_file() and marker.read_text().strip() == "multilabel"


def read(settings) -> PreparedSource:
    root = Path(settings["export"])
    multilabel = is_multilabel_export(root)
    objective = settings.get("objective")
    fields = settings.get("groups") or []
    if objective is not None and objective not in fields:
        raise ClipevalError(
            f"objective: {objective!r} is the column of each sample's .npy that holds its class: name the columns"
            " in groups (FairFace, UTKFace: [age, gender, race, race_binary])"
        )
    prefixed = f" prefixed {objective + ':'!r}" if objective else ""
    classnames = [line for _, line in objective_lines(root / CLASSNAMES, "class names", objective)]
    if not classnames:
        raise ClipevalError(f"{root / CLASSNAMES}: no class names{prefixed}")
    templates = export_templates(root / TEMPLATES, objective)
    if not templates:
        raise ClipevalError(f"{root / TEMPLATES}: no templates{prefixed}")
    if multilabel and fields:
        raise ClipevalError(
            f"groups: {root / DATASET_TYPE} says a multi-label set, whose .npy holds each sample's classes, not groups"
        )
    repeated = sorted({field for field in fields if fields.count(field) > 1})
    if repeated:
        raise ClipevalError(f"groups: the field {repeated[0]!r} is named twice")
    images, labels = [], []
    wanted = ("npy",) if multilabel or objective else ("cls", "npy") if fields else ("cls",)
    unnamed_groups = None
    for where, raw, members, extensions in samples_with(shard_files(root, settings["split"]), wanted):
        if not fields and not multilabel and "npy" in extensions and unnamed_groups is None:
            unnamed_groups = where
        decode_image(raw, where)
        images.append((len(images), raw))
        if multilabel:
            labels.append((len(labels), sample_classes(members[0], len(classnames), where)))
            continue
        if objective:
            groups = sample_groups(members[0], fields, where)
            if not 0 <= groups[objective] < len(classnames):
                raise ClipevalError(
                    f"{where}: .npy's {objective} is {groups[objective]}, not an index below {len(classnames)}"
                    f" (the class names{prefixed} in {root / CLASSNAMES})"
                )
            labels.append((len(labels), groups[objective], groups))
            continue
        text = text_of(members[0], where, "cls").strip()
        if not (text.isascii() and text.isdigit()) or int(text) >= len(classnames):
            raise ClipevalError(
                f"{where}: class {text!r} is not an index below {len(classnames)} ({root / CLASSNAMES})"
            )
        groups = {"groups": sample_groups(members[1], fields, where)} if fields else {}
        labels.append((len(labels), int(text), *groups.values()))
    if unnamed_groups:  # DataComp's fairness sets: their main metrics are by group
        print(
            f"note: {unnamed_groups} (and maybe others) has a .npy, where DataComp's exports keep a sample's groups"
            " (fairness sets) or metadata (WILDS); it is not read: `groups:` names its columns to score by group",
            file=sys.stderr,
        )
    source = {"format": "wds_classification", "export": str(root), "split": settings["split"]}
    if fields:
        source["groups"] = list(fields)
    if objective:
        source["objective"] = objective
    return PreparedSource(images, None, source, classes=(labels, classnames, templates))


def whole_number_vector(raw: bytes, length: int, where: str, expected: str) -> np.ndarray:
    """A sample's `npy` as a vector of `length` whole numbers (integers, or floats that are whole). The header is
    read first, so that no pickle is loaded and nothing is allocated for a shape the bytes do not hold."""
    buffer = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(buffer)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(buffer)
    except (ValueError, OSError, EOFError) as error:
        raise ClipevalError(f"{where}: .npy is not a numpy array file ({first_line(error)})") from None
    if dtype.kind not in "biuf" or shape != (length,):
        raise ClipevalError(f"{where}: .npy holds {dtype} of shape {shape}, {expected}")
    data = raw[buffer.tell() :]
    if len(data) != dtype.itemsize * length:
        raise ClipevalError(f"{where}: .npy has {len(data)} bytes of data where its header declares {shape} {dtype}")
    vector = np.frombuffer(data, dtype=dtype)
    if dtype.kind == "f" and not np.all(np.isfinite(vector) & (vector == np.round(vector))):
        raise ClipevalError(f"{where}: .npy holds {vector.tolist()}, {expected}")
    return vector


def sample_groups(raw: bytes, fields: list[str], where: str) -> dict[str, int]:
    """{field: group} from a sample's `npy`: a vector of numbers, one per field, each a whole number."""
    expected = f"not {len(fields)} integers, one per group field ({', '.join(fields)})"
    vector = whole_number_vector(raw, len(fields), where, expected)
    return {field: int(value) for field, value in zip(fields, vector)}


def sample_classes(raw: bytes, num_classes: int, where: str) -> list[int]:
    """The classes a sample of a multi-label set holds, from its `npy`: a 0/1 vector, one per class."""
    expected = f"not {num_classes} zeros and ones, one per class ({CLASSNAMES})"
    vector = whole_number_vector(raw, num_classes, where, expected)
    if not np.all((vector == 0) | (vector == 1)):
        raise ClipevalError(f"{where}: .npy holds {vector.tolist()}, {expected}")
    return np.flatnonzero(vector).tolist()


FORMAT = SourceFormat(
    name="wds_classification",
    help="a classification set in CLIP_benchmark's webdataset export (ROOT/SPLIT/N.tar: image + .cls)",
    writes=CLASSES,
    settings=(EXPORT, SPLIT, GROUPS, OBJECTIVE),
    read=read,
)
