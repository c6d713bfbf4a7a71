"""Crossmodal-3600 (XM3600): captions.jsonl, one line per image (`image/key` and, for each of its 36
languages, the captions), and the images folder (`KEY.jpg`); a dataset reads one language.

Image ids count the lines from 0 in file order, so every language's dataset
numbers the images alike; caption ids count the captions kept, in file order.
`captions: first` keeps each image's first caption in the language, as
CLIP_benchmark's XM3600 evaluation does; `all` keeps every one. A line
without captions in the language, or an image file that is not there, stops
the import naming the line (CLIP_benchmark skips a missing image with a
warning).
"""

from pathlib import Path

from clipeval.data.annotation_json import CaptionCollector
from clipeval.data.image_files import listed_image, read_image_files
from clipeval.data.sources import CAPTIONS, FILE, IMAGE_DIRECTORY, PreparedSource, Setting, SourceFormat
from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_jsonl

LANGUAGES = (
    "ar", "bn", "cs", "da", "de", "el", "en", "es", "fa", "fi", "fil", "fr", "he", "hi", "hr", "hu", "id", "it",
    "ja", "ko", "mi", "nl", "no", "pl", "pt", "quz", "ro", "ru", "sv", "sw", "te", "th", "tr", "uk", "vi", "zh",
)  # fmt: skip


def language_captions(entry: dict, language: str, where: str) -> list:
    in_language = entry.get(language)
    captions = in_language.get("caption") if isinstance(in_language, dict) else None
    if not isinstance(captions, list) or not captions:
        raise ClipevalError(f"{where}: no {language} captions")
    return captions


def read(settings) -> PreparedSource:
    path, language, images = settings["annotations"], settings["language"], settings["images"]
    files, collector = [], CaptionCollector(path)
    for line, entry in read_jsonl(path):
        key = entry.get("image/key")
        if not isinstance(key, str) or not key.strip():
            raise ClipevalError(f"{path}:{line}: image/key must be a non-empty string")
        where = f"{path}:{line}: image/key {key}"
        image_id = len(files)
        files.append((image_id, listed_image(images, [f"{key}.jpg"], where)))
        captions = language_captions(entry, language, where)
        for caption in captions[:1] if settings["captions"] == "first" else captions:
            collector.add(len(collector.text_ids), caption, image_id, where)
    if not files:
        raise ClipevalError(f"{path}: no images")
    source = {
        "format": "xm3600",
        "annotations": str(path),
        "images": str(images),
        "language": language,
        "captions": settings["captions"],
    }
    return PreparedSource(read_image_files(files, path), collector.captions(), source)


FORMAT = SourceFormat(
    name="xm3600",
    help="Crossmodal-3600: captions.jsonl and its images, the captions of one language",
    writes=CAPTIONS,
    settings=(
        Setting("annotations", "XM3600's captions.jsonl", kind=FILE, type=Path, required=True),
        IMAGE_DIRECTORY,
        Setting("language", "the captions' language", required=True, choices=LANGUAGES),
        Setting(
            "captions",
            "first (default): each image's first caption, as CLIP_benchmark; all: every caption",
            default="first",
            choices=("first", "all"),
        ),
    ),
    read=read,
)
