"""Chinese-CLIP data: `*_imgs.tsv` (image_id TAB base64) or an image LMDB, plus `*_texts.jsonl`."""

from collections.abc import Iterator
from pathlib import Path

from clipeval.data.captions import load_captions
from clipeval.data.image_lmdb import ImageStore, decode_base64, decode_image
from clipeval.data.sources import CAPTIONS, FILE, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError

# A tsv line holds one base64 image: 64 MiB is a 48 MB image file, far above
# any benchmark's, and keeps a file of one endless line from being read whole.
MAX_TSV_LINE_BYTES = 64 << 20


def read_image_tsv(path) -> Iterator[tuple[int, bytes]]:
    """Yield (image_id, encoded bytes) per line, checking each image decodes."""
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: file not found")
    first_line_of = {}
    with open(path, "rb") as handle:
        for line_number, line in enumerate(iter(lambda: handle.readline(MAX_TSV_LINE_BYTES + 1), b""), start=1):
            where = f"{path}:{line_number}"
            if len(line) > MAX_TSV_LINE_BYTES:
                raise ClipevalError(f"{where}: line longer than {MAX_TSV_LINE_BYTES >> 20} MiB, not read")
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            fields = line.split(b"\t")
            if len(fields) != 2:
                raise ClipevalError(f"{where}: expected 2 tab-separated fields (image_id, base64), got {len(fields)}")
            try:
                image_id = int(fields[0])
            except ValueError:
                raise ClipevalError(
                    f"{where}: image_id {fields[0].decode(errors='replace')!r} is not an integer"
                ) from None
            if image_id < 0:
                raise ClipevalError(f"{where}: image_id {image_id} is negative")
            if image_id in first_line_of:
                raise ClipevalError(f"{where}: duplicate image_id {image_id} (first on line {first_line_of[image_id]})")
            first_line_of[image_id] = line_number
            raw = decode_base64(fields[1], f"{where}: image_id {image_id}")
            decode_image(raw, f"{where}: image_id {image_id}")
            yield image_id, raw


def read_image_lmdb(path) -> Iterator[tuple[int, bytes]]:
    store = ImageStore(path)
    try:
        image_ids = store.image_ids()
        claimed = store.claimed_count()
        if claimed is not None and claimed != len(image_ids):
            raise ClipevalError(f"{path}: num_images says {claimed}, but the LMDB holds {len(image_ids)} images")
        for image_id in image_ids:
            raw = store.encoded_bytes(int(image_id))
            decode_image(raw, f"{path}: image_id {image_id}")
            yield int(image_id), raw
    finally:
        store.close()


def read(settings) -> PreparedSource:
    images = settings["images"]
    reader = read_image_lmdb if images.is_dir() else read_image_tsv
    source = {"format": "cnclip", "images": str(images), "texts": str(settings["texts"])}
    return PreparedSource(reader(images), load_captions(settings["texts"]), source)


def image_files_to_track(images) -> list[str]:
    """The tsv, or an LMDB's data file (a folder's content cannot be checksummed as one file)."""
    return [str(Path(images) / "data.mdb")] if Path(images).is_dir() else [str(images)]


FORMAT = SourceFormat(
    name="cnclip",
    help="Chinese-CLIP *_imgs.tsv (or image LMDB) + *_texts.jsonl",
    writes=CAPTIONS,
    settings=(
        Setting(
            "images",
            "X_imgs.tsv, or an image LMDB directory in Chinese-CLIP's layout",
            kind=FILE,
            type=Path,
            required=True,
            tracked_files=image_files_to_track,
        ),
        Setting("texts", "X_texts.jsonl", kind=FILE, type=Path, required=True),
    ),
    read=read,
)
