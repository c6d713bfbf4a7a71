from pathlib import Path

from clipeval.commands._options import add_labelled_import_options

HELP = "import class folders + class names + templates (classification)"


def add_arguments(parser):
    parser.add_argument("--images", type=Path, required=True, help="one folder per class")
    parser.add_argument("--classnames", type=Path, required=True, help="a class per line: 'folder<TAB>name' or 'name'")
    add_labelled_import_options(parser)


def run(args):
    from clipeval.commands._options import report_import
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources.image_files import read_image_files
    from clipeval.data.sources.imagefolder import class_folders, image_files, read_classnames
    from clipeval.data.sources.text_lists import read_templates

    entries = read_classnames(args.classnames)
    templates = read_templates(args.templates)
    files, labels = image_files(class_folders(args.images, entries, args.classnames), args.first_image_id)
    source = {"format": "imagefolder", "images": str(args.images), "classnames": str(args.classnames),
              "templates": str(args.templates)}
    classes = (labels, [name for _, name in entries], templates)
    report_import(write_dataset(args.out, read_image_files(files, args.images), None, source, classes), args.out)
