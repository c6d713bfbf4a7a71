from pathlib import Path

HELP = "import a Karpathy split (dataset_flickr30k.json, dataset_coco.json)"


def add_arguments(parser):
    parser.add_argument("--annotations", type=Path, required=True, help="the Karpathy split JSON")
    parser.add_argument("--images", type=Path, required=True, help="the image directory")
    parser.add_argument("--split", nargs="+", default=["test"], help="train, restval, val and/or test (default: test)")
    parser.add_argument("--image-id", choices=("cocoid", "imgid"), help="id field (default: cocoid where present)")
    parser.add_argument("--out", type=Path, required=True)


def run(args):
    from clipeval.commands._options import report_import
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources.image_files import read_image_files
    from clipeval.data.sources.karpathy import karpathy_split

    files, captions = karpathy_split(args.annotations, args.images, args.split, args.image_id)
    source = {"format": "karpathy", "annotations": str(args.annotations), "images": str(args.images), "split": args.split,
              "image_id": args.image_id}
    report_import(write_dataset(args.out, read_image_files(files, args.annotations), captions, source), args.out)
