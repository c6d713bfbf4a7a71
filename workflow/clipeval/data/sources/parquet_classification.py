"""A classification set in parquet shards (data/parquet_shards.py), as the Hugging Face hub holds them: a row
per image, its encoded bytes in `image_column` (default `image`) and its class index in `label_column`
(default `label`). The class names are the hub's ClassLabel names in the shards' metadata, unless a
`classnames` file (one per line, in index order) is given; `templates` gives the prompts.

Image ids count the rows from 0, shards in name order.
"""

from pathlib import Path

from clipeval.data.image_lmdb import decode_image
from clipeval.data.parquet_shards import image_bytes, rows
from clipeval.data.sources import CLASSES, FILE, TEMPLATES, PreparedSource, Setting, SourceFormat
from clipeval.data.sources.parquet_retrieval import IMAGE_COLUMN, SHARDS, SPLIT
from clipeval.data.text_lists import nonblank_lines, read_templates
from clipeval.errors import ClipevalError


def hub_classnames(hub: dict, column: str) -> list[str] | None:
    """The ClassLabel names the hub's metadata gives the label column, if it does."""
    feature = (((hub.get("info") or {}).get("features") or {}).get(column)) if isinstance(hub, dict) else None
    names = feature.get("names") if isinstance(feature, dict) else None
    if isinstance(names, list) and names and all(isinstance(name, str) and name.strip() for name in names):
        return [name.strip() for name in names]
    return None


def read(settings) -> PreparedSource:
    image_column, label_column = settings["image_column"], settings["label_column"]
    given = settings["classnames"]
    classnames = [line.strip() for _, line in nonblank_lines(given, "class names")] if given else None
    images, labels = [], []
    for where, row, hub in rows(settings["shards"], settings["split"], [image_column, label_column]):
        if classnames is None:
            classnames = hub_classnames(hub, label_column)
            if classnames is None:
                raise ClipevalError(f"{where}: the shards name no classes for {label_column!r}; give classnames")
        label = row[label_column]
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(classnames):
            raise ClipevalError(f"{where}: label {label!r} is not a class index below {len(classnames)}")
        raw = image_bytes(row[image_column], where)
        decode_image(raw, where)
        images.append((len(images), raw))
        labels.append((len(labels), label))
    source = {"format": "parquet_classification", "shards": str(settings["shards"]), "split": settings["split"]}
    source.update(columns=[image_column, label_column], classnames=str(given) if given else "from the shards")
    return PreparedSource(images, None, source, classes=(labels, classnames, read_templates(settings["templates"])))


FORMAT = SourceFormat(
    name="parquet_classification",
    help="a classification set in parquet shards: a row per image, its bytes and its class index",
    writes=CLASSES,
    settings=(
        SHARDS,
        SPLIT,
        IMAGE_COLUMN,
        Setting("label_column", "the column of class indices (default: label)", default="label"),
        Setting(
            "classnames",
            "a class name per line, in index order (default: the shards' ClassLabel names)",
            kind=FILE,
            type=Path,
        ),
        TEMPLATES,
    ),
    read=read,
)
