"""ARO's COCO-Order and Flickr30k-Order as parquet shards (data/parquet_shards.py), the layout of the copies
MIEB evaluates (gowitheflow/ARO-COCO-order and gowitheflow/ARO-Flickr-Order on the Hugging Face hub): a row
per caption of the Karpathy test split, its image in `images` (the hub's Image feature), the caption in
`correct_caption` and the four word-order perturbations ARO made of it in `hard_text_1` … `hard_text_4`.

Each row is an example of one image and its captions, the true one first. Rows
that hold the same image bytes share one image id (a COCO image has five
captions, so five rows): each image is stored and extracted once. Image ids
number the distinct images in order of first appearance from 0. The k-th row's
captions have ids 5k (the true caption) and 5k + j (the j-th perturbation), so
a tie goes to the true caption under the ranking rule, as ARO's argmax over
[true, perturbations…] gives it. ARO reports the accuracy over all rows: the
examples form one group, `order`.
"""

import hashlib
from pathlib import Path

import numpy as np

from clipeval.data.captions import Captions
from clipeval.data.choices import Example
from clipeval.data.image_lmdb import decode_image
from clipeval.data.parquet_shards import image_bytes, rows
from clipeval.data.sources import CHOICES, FOLDER, PreparedSource, Setting, SourceFormat
from clipeval.data.sources.parquet_retrieval import SPLIT
from clipeval.errors import ClipevalError

PERTURBATIONS = ("hard_text_1", "hard_text_2", "hard_text_3", "hard_text_4")
GROUP = "order"


def _text(row, column, where) -> str:
    value = row[column]
    if not isinstance(value, str) or not value.strip():
        raise ClipevalError(f"{where}: {column} must be a non-empty string")
    return value.strip()


def read(settings) -> PreparedSource:
    image_column, caption_column = settings["image_column"], settings["caption_column"]
    perturbations = list(settings["perturbation_columns"])
    columns = [image_column, caption_column, *perturbations]
    if len(set(columns)) != len(columns):
        raise ClipevalError(f"{settings['shards']}: the image, caption and perturbation columns must differ")
    per_example = 1 + len(perturbations)
    images, image_of_digest, texts, owners, examples = [], {}, [], [], []
    for where, row, _ in rows(settings["shards"], settings["split"], columns):
        raw = image_bytes(row[image_column], where)
        digest = hashlib.sha256(raw).digest()
        if digest not in image_of_digest:
            decode_image(raw, where)
            image_of_digest[digest] = len(images)
            images.append((len(images), raw))
        image_id, index = image_of_digest[digest], len(examples)
        texts += [_text(row, column, where) for column in (caption_column, *perturbations)]
        owners += [image_id] * per_example
        text_ids = tuple(range(per_example * index, per_example * (index + 1)))
        examples.append(Example(index, GROUP, (image_id,), text_ids))
    if not examples:
        raise ClipevalError(f"{settings['shards']}: the shards hold no rows")
    captions = Captions(
        np.arange(len(texts), dtype=np.int64), texts, [np.array([owner], dtype=np.int64) for owner in owners]
    )
    source = {"format": "aro_order", "shards": str(settings["shards"]), "split": settings["split"], "columns": columns}
    return PreparedSource(images, captions, source, examples=examples)


FORMAT = SourceFormat(
    name="aro_order",
    help="ARO's COCO-Order or Flickr30k-Order in parquet shards: a row per caption, its image and perturbations",
    writes=CHOICES,
    settings=(
        Setting("shards", "the folder of .parquet files (read in name order)", kind=FOLDER, type=Path, required=True),
        SPLIT,
        Setting("image_column", "the column of encoded images (default: images)", default="images"),
        Setting("caption_column", "the column of true captions (default: correct_caption)", default="correct_caption"),
        Setting(
            "perturbation_columns",
            "the columns of the perturbed captions, in order (default: hard_text_1 … hard_text_4)",
            many=True,
            default=PERTURBATIONS,
        ),
    ),
    read=read,
)
