"""A retrieval set in parquet shards (data/parquet_shards.py), as the Hugging Face hub holds image–caption test
sets: a row per image, its encoded bytes in `image_column` (default `image`, the hub's Image feature) and its
captions in `caption_column` (default `caption`: one string, or a list of them).

Image ids count the rows from 0, shards in name order; caption ids count the
captions likewise.
"""

from pathlib import Path

from clipeval.data.annotation_json import CaptionCollector
from clipeval.data.image_lmdb import decode_image
from clipeval.data.parquet_shards import image_bytes, rows
from clipeval.data.sources import CAPTIONS, FOLDER, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError

SHARDS = Setting("shards", "the folder of .parquet files (read in name order)", kind=FOLDER, type=Path, required=True)
SPLIT = Setting(
    "split", "the split read, where the shards' names or folders say theirs (default: test)", default="test"
)
IMAGE_COLUMN = Setting("image_column", "the column of encoded images (default: image)", default="image")


def read(settings) -> PreparedSource:
    images, collector = [], CaptionCollector(settings["shards"])
    columns = [settings["image_column"], settings["caption_column"]]
    for where, row, _ in rows(settings["shards"], settings["split"], columns):
        raw = image_bytes(row[settings["image_column"]], where)
        decode_image(raw, where)
        image_id = len(images)
        images.append((image_id, raw))
        captions = row[settings["caption_column"]]
        captions = [captions] if isinstance(captions, str) else captions
        if not isinstance(captions, list) or not captions:
            raise ClipevalError(f"{where}: {settings['caption_column']} holds no caption")
        for caption in captions:
            collector.add(len(collector.text_ids), caption, image_id, where)
    source = {"format": "parquet_retrieval", "shards": str(settings["shards"]), "split": settings["split"]}
    source["columns"] = columns
    return PreparedSource(images, collector.captions(), source)


FORMAT = SourceFormat(
    name="parquet_retrieval",
    help="a retrieval set in parquet shards: a row per image, its bytes and its captions",
    writes=CAPTIONS,
    settings=(
        SHARDS,
        SPLIT,
        IMAGE_COLUMN,
        Setting("caption_column", "the column of captions, a string or a list (default: caption)", default="caption"),
    ),
    read=read,
)
