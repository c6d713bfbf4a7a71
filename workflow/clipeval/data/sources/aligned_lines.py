"""Captions aligned line by line with a list of image file names, as XTD10 (`test_image_names.txt` with
`test_1kcaptions_LANG.txt`) and Multi30k (`image_splits/test_2016_flickr.txt` with `raw/test_2016_flickr.LANG`)
ship their test sets: line i of the caption file describes the image on line i of the names file.

Image ids count the names' lines from 0, so every language's dataset numbers
the images alike; caption ids count the caption file's lines. Every line
counts: a blank line, a caption file of another length than the names file,
a name listed twice or an image file that is not there stops the import
naming the file and line (CLIP_benchmark skips XTD10's missing images with a
warning).
"""

from pathlib import Path

from clipeval.data.annotation_json import CaptionCollector
from clipeval.data.image_files import listed_image, read_image_files
from clipeval.data.sources import CAPTIONS, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.text import without_bom


def numbered_lines(path: Path, what: str) -> list[tuple[int, str]]:
    """(line number, text) of every line, a final newline ending the last; a blank line or text that is not
    UTF-8 is refused with its file and line."""
    if not path.is_file():
        raise ClipevalError(f"{path}: {what} file not found")
    raw = without_bom(path.read_bytes())
    parts = raw.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    lines = []
    for number, part in enumerate(parts, 1):
        try:
            text = part.decode("utf-8").rstrip("\r").strip()
        except UnicodeDecodeError:
            raise ClipevalError(f"{path}:{number}: not UTF-8 text") from None
        if not text:
            raise ClipevalError(f"{path}:{number}: blank line (each line is the {what} of one image)")
        lines.append((number, text))
    if not lines:
        raise ClipevalError(f"{path}: no lines")
    return lines


def read(settings) -> PreparedSource:
    names_path, captions_path, images = settings["image_names"], settings["captions"], settings["images"]
    names = numbered_lines(names_path, "image name")
    captions = numbered_lines(captions_path, "caption")
    if len(captions) != len(names):
        raise ClipevalError(
            f"{captions_path}: {len(captions)} captions for the {len(names)} images of {names_path}"
            " (line i describes the image on line i)"
        )
    first_line = {}
    files = []
    for image_id, (number, name) in enumerate(names):
        where = f"{names_path}:{number}"
        if name in first_line:
            raise ClipevalError(f"{where}: image {name} listed again (first on line {first_line[name]})")
        first_line[name] = number
        files.append((image_id, listed_image(images, [name], where)))
    collector = CaptionCollector(captions_path)
    for image_id, (number, caption) in enumerate(captions):
        collector.add(image_id, caption, image_id, f"{captions_path}:{number}")
    source = {
        "format": "aligned_lines",
        "image_names": str(names_path),
        "captions": str(captions_path),
        "images": str(images),
    }
    return PreparedSource(read_image_files(files, names_path), collector.captions(), source)


FORMAT = SourceFormat(
    name="aligned_lines",
    help="XTD10, Multi30k: a file of image names and a caption file aligned with it line by line",
    writes=CAPTIONS,
    settings=(
        Setting("image_names", "one image file name per line", kind=FILE, type=Path, required=True),
        Setting(
            "captions", "one caption per line, line i for the image on line i", kind=FILE, type=Path, required=True
        ),
        IMAGE_DIRECTORY,
    ),
    read=read,
)
