from pathlib import Path

from clipeval.commands._gallery import add_gallery_options

HELP = "the report's failure gallery of one model on a classification dataset: its most confused classes"
LIBRARIES = ("numpy", "matplotlib", "mplfonts", "pillow")


def add_arguments(parser):
    add_gallery_options(parser)
    parser.add_argument("--class-feats", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--classes", type=Path, required=True, help="classes.json")
    parser.add_argument("--confusion-output", type=Path, required=True, help="PNG; the matrix as .csv beside it")
    parser.add_argument("--pairs-output", type=Path, required=True)


def run(args):
    from clipeval.classification.inputs import load_classification_inputs
    from clipeval.commands._gallery import open_thumbnails
    from clipeval.reporting import figures
    from clipeval.reporting.failures import classification_gallery
    from clipeval.reporting.gallery_plots import plot_confused_pairs, plot_confusion

    thumbnails = open_thumbnails(args)
    given = load_classification_inputs(args.classes, args.labels, args.image_feats, args.class_feats)
    classnames = given.spec.classnames
    gallery = classification_gallery(
        given.image_ids, given.images, given.classes, given.labels, args.failures, args.shown
    )
    # Each class's images: a multi-label image whose top-1 is another class it holds is in no row of the matrix.
    support = given.labels.sum(axis=0) if given.labels.ndim == 2 else gallery.confusion.sum(axis=1)
    plot_confusion(f"{args.title}: confusion matrix", gallery.confusion, classnames, args.confusion_output, support)
    figures.write_csv(
        figures.data_path(args.confusion_output),
        ["true \\ predicted", *classnames],
        [[name, *row] for name, row in zip(classnames, gallery.confusion.tolist())],
    )
    plot_confused_pairs(
        f"{args.title}: most confused classes",
        gallery.pairs,
        gallery.examples,
        classnames,
        support,
        thumbnails,
        args.pairs_output,
    )
    print(f"wrote {args.confusion_output} and {args.pairs_output}")
