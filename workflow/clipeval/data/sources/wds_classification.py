"""A classification set in CLIP_benchmark's webdataset export (data/tar_shards.py): each sample an image and
its class index (`cls`), with ROOT/classnames.txt (a class per line, in index order) and
ROOT/zeroshot_classification_templates.txt (a template per line, `{c}` standing for the class name) beside
the split.

Image ids count the samples from 0 in shard and tar order.
"""

from pathlib import Path

from clipeval.data.image_lmdb import decode_image
from clipeval.data.sources import CLASSES, PreparedSource, SourceFormat
from clipeval.data.sources.wds_retrieval import EXPORT, SPLIT
from clipeval.data.tar_shards import samples, shard_files, text_of
from clipeval.data.text_lists import nonblank_lines
from clipeval.errors import ClipevalError

CLASSNAMES, TEMPLATES = "classnames.txt", "zeroshot_classification_templates.txt"


def export_templates(path) -> list[str]:
    """CLIP_benchmark's templates, `{c}` for the class name, as clipeval's (`{}`)."""
    templates = []
    for number, line in nonblank_lines(path, "templates"):
        if "{c}" not in line:
            raise ClipevalError(f"{path}:{number}: template {line.strip()!r} has no {{c}} for the class name")
        templates.append(line.strip().replace("{", "{{").replace("}", "}}").replace("{{c}}", "{}"))
    return templates


def read(settings) -> PreparedSource:
    root = Path(settings["export"])
    if (root / "dataset_type.txt").is_file() and (root / "dataset_type.txt").read_text().strip() == "multilabel":
        raise ClipevalError(f"{root / 'dataset_type.txt'}: a multilabel set, which clipeval does not score")
    classnames = [line.strip() for _, line in nonblank_lines(root / CLASSNAMES, "class names")]
    if not classnames:
        raise ClipevalError(f"{root / CLASSNAMES}: no class names")
    templates = export_templates(root / TEMPLATES)
    if not templates:
        raise ClipevalError(f"{root / TEMPLATES}: no templates")
    images, labels = [], []
    for where, raw, label in samples(shard_files(root, settings["split"]), "cls"):
        text = text_of(label, where, "cls").strip()
        if not (text.isascii() and text.isdigit()) or int(text) >= len(classnames):
            raise ClipevalError(
                f"{where}: class {text!r} is not an index below {len(classnames)} ({root / CLASSNAMES})"
            )
        decode_image(raw, where)
        images.append((len(images), raw))
        labels.append((len(labels), int(text)))
    source = {"format": "wds_classification", "export": str(root), "split": settings["split"]}
    return PreparedSource(images, None, source, classes=(labels, classnames, templates))


FORMAT = SourceFormat(
    name="wds_classification",
    help="a classification set in CLIP_benchmark's webdataset export (ROOT/SPLIT/N.tar: image + .cls)",
    writes=CLASSES,
    settings=(EXPORT, SPLIT),
    read=read,
)
