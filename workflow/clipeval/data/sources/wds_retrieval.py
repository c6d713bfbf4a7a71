"""A retrieval set in CLIP_benchmark's webdataset export (data/tar_shards.py): each sample an image and its
captions (`txt`, one per line, a newline inside a caption written as the two characters \\n).

Image ids count the samples from 0 in shard and tar order; caption ids count
the captions in the same order.
"""

from pathlib import Path

from clipeval.data.annotation_json import CaptionCollector
from clipeval.data.image_lmdb import decode_image
from clipeval.data.sources import CAPTIONS, FOLDER, PreparedSource, Setting, SourceFormat
from clipeval.data.tar_shards import samples, shard_files, text_of
from clipeval.errors import ClipevalError

SPLIT = Setting("split", "the split folder under the export (default: test)", default="test")
EXPORT = Setting("export", "the export's folder (ROOT of ROOT/SPLIT/0.tar …)", kind=FOLDER, type=Path, required=True)


def read(settings) -> PreparedSource:
    shards = shard_files(settings["export"], settings["split"])
    images, collector = [], CaptionCollector(Path(settings["export"]) / settings["split"])
    for where, raw, captions in samples(shards, "txt"):
        image_id = len(images)
        decode_image(raw, where)
        images.append((image_id, raw))
        lines = [line for line in text_of(captions, where, "txt").split("\n") if line.strip()]
        if not lines:
            raise ClipevalError(f"{where}: its .txt has no caption")
        for line in lines:
            collector.add(len(collector.text_ids), line.replace("\\n", "\n"), image_id, where)
    source = {"format": "wds_retrieval", "export": str(settings["export"]), "split": settings["split"]}
    return PreparedSource(images, collector.captions(), source)


FORMAT = SourceFormat(
    name="wds_retrieval",
    help="a retrieval set in CLIP_benchmark's webdataset export (ROOT/SPLIT/N.tar: image + .txt captions)",
    writes=CAPTIONS,
    settings=(EXPORT, SPLIT),
    read=read,
)
