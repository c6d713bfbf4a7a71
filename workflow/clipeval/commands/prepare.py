import argparse
from pathlib import Path

from clipeval.data.sources import format_names

HELP = "prepare a dataset (images.lmdb, texts.jsonl or labels, meta.json) from a source format"
LIBRARIES = ("pillow", "lmdb", "numpy")


def add_arguments(parser):
    parser.add_argument("format", choices=format_names(), help="the source format")
    parser.add_argument(
        "settings",
        nargs=argparse.REMAINDER,
        help="the format's settings and --out DIR (see: clipeval prepare FORMAT --help)",
    )


def format_parser(source_format) -> argparse.ArgumentParser:
    """`clipeval prepare FORMAT`'s own options: one per key of the format's config entry, and --out."""
    parser = argparse.ArgumentParser(prog=f"clipeval prepare {source_format.name}", description=source_format.help)
    for setting in source_format.settings:
        parser.add_argument(
            setting.flag,
            dest=setting.key,
            type=setting.type,
            required=setting.required,
            default=setting.default,
            choices=setting.choices,
            nargs="+" if setting.many else None,
            help=setting.help,
        )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the dataset directory to write")
    return parser


def run(args):
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources import source_format

    chosen = source_format(args.format)
    settings = vars(format_parser(chosen).parse_args(args.settings))
    out = settings.pop("out")
    counts = write_dataset(out, chosen.read(settings))["counts"]
    if "texts" not in counts:
        print(f"wrote {counts['images']} labelled images to {out}")
        return
    print(f"wrote {counts['images']} images, {counts['texts']} captions to {out}")
    if counts["images_without_caption"]:
        print(f"note: {counts['images_without_caption']} images have no caption")
