from pathlib import Path

HELP = "import a COCO captions file (captions_val2017.json …)"


def add_arguments(parser):
    parser.add_argument("--annotations", type=Path, required=True)
    parser.add_argument("--images", type=Path, required=True, help="the image directory")
    parser.add_argument("--image-ids", type=Path, help="keep only these image ids (one per line)")
    parser.add_argument("--out", type=Path, required=True)


def run(args):
    from clipeval.commands._options import report_import
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources.coco import coco_captions, read_id_list
    from clipeval.data.sources.image_files import read_image_files

    only = read_id_list(args.image_ids) if args.image_ids else None
    files, captions = coco_captions(args.annotations, args.images, only)
    source = {"format": "coco", "annotations": str(args.annotations), "images": str(args.images),
              "image_ids": str(args.image_ids) if args.image_ids else None}
    report_import(write_dataset(args.out, read_image_files(files, args.annotations), captions, source), args.out)
