from pathlib import Path

from clipeval.commands._options import add_labelled_import_options

HELP = "import a CIFAR-10/100 python batch (classification)"


def add_arguments(parser):
    parser.add_argument("--batch", type=Path, required=True, help="cifar-10-batches-py/test_batch or cifar-100-python/test")
    add_labelled_import_options(parser)


def run(args):
    from clipeval.commands._options import report_import
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources.cifar import png_images, read_cifar
    from clipeval.data.sources.text_lists import read_templates

    templates = read_templates(args.templates)
    layout, pixels, labels, classnames = read_cifar(args.batch)
    source = {"format": "cifar", "layout": layout, "batch": str(args.batch), "templates": str(args.templates)}
    ids = range(args.first_image_id, args.first_image_id + len(labels))
    classes = (list(zip(ids, labels)), classnames, templates)
    report_import(write_dataset(args.out, png_images(pixels, args.first_image_id), None, source, classes), args.out)
