from pathlib import Path

HELP = "generate the synthetic shapes benchmark"


def add_arguments(parser):
    parser.add_argument("--num-images", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--first-image-id", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)


def run(args):
    from clipeval.commands._options import report_import
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources.shapes import CLASS_TEMPLATES, CLASSNAMES, generate_shapes

    images, captions, labels = generate_shapes(args.num_images, args.seed, args.first_image_id)
    source = {"format": "shapes", "num_images": args.num_images, "seed": args.seed}
    classes = (labels, list(CLASSNAMES), list(CLASS_TEMPLATES))
    report_import(write_dataset(args.out, images, captions, source, classes), args.out)
