from pathlib import Path

HELP = "import Chinese-CLIP *_imgs.tsv (or image LMDB) + *_texts.jsonl"


def add_arguments(parser):
    parser.add_argument("--images", type=Path, required=True)
    parser.add_argument("--texts", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)


def run(args):
    from clipeval.commands._options import report_import
    from clipeval.data.sources.cnclip import import_cnclip

    report_import(import_cnclip(args.images, args.texts, args.out), args.out)
