from pathlib import Path

from clipeval.commands._gallery import add_gallery_options

HELP = "the report's failure gallery of one model on a classification dataset: its most confused classes"
LIBRARIES = ("numpy", "matplotlib", "pillow")


def add_arguments(parser):
    add_gallery_options(parser)
    parser.add_argument("--class-feats", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--classes", type=Path, required=True, help="classes.json")
    parser.add_argument("--confusion-output", type=Path, required=True, help="PNG; the matrix as .csv beside it")
    parser.add_argument("--pairs-output", type=Path, required=True)


def run(args):
    import numpy as np

    from clipeval.classification.inputs import load_classification_inputs
    from clipeval.classification.metrics import ranked_classes
    from clipeval.commands._gallery import open_thumbnails
    from clipeval.reporting import figures
    from clipeval.reporting.failures import confused_pairs, confusion_examples
    from clipeval.reporting.gallery_plots import plot_confused_pairs, plot_confusion

    thumbnails = open_thumbnails(args)
    given = load_classification_inputs(args.classes, args.labels, args.image_feats, args.class_feats)
    spec, image_ids, truth = given.spec, given.image_ids, given.labels
    predicted = ranked_classes(given.images, given.classes)[:, 0]
    confusion = np.zeros((len(spec.classnames), len(spec.classnames)), dtype=np.int64)
    np.add.at(confusion, (truth, predicted), 1)
    plot_confusion(f"{args.title}: confusion matrix", confusion, spec.classnames, args.confusion_output)
    figures.write_csv(
        figures.data_path(args.confusion_output),
        ["true \\ predicted", *spec.classnames],
        [[name, *row] for name, row in zip(spec.classnames, confusion.tolist())],
    )
    pairs = confused_pairs(truth, predicted, args.failures)
    examples = [confusion_examples(image_ids, truth, predicted, true, guess, args.shown) for true, guess, _ in pairs]
    plot_confused_pairs(
        f"{args.title}: most confused classes",
        pairs,
        examples,
        spec.classnames,
        confusion.sum(axis=1),
        thumbnails,
        args.pairs_output,
    )
    print(f"wrote {args.confusion_output} and {args.pairs_output}")
