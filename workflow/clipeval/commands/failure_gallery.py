from pathlib import Path

HELP = "the report's failure gallery of one model on one dataset: worst queries, or most confused classes"
LIBRARIES = ("numpy", "matplotlib", "pillow")


def add_arguments(parser):
    parser.add_argument("--title", required=True, help="MODEL on DATASET, for the figures' titles")
    parser.add_argument("--images", type=Path, required=True, help="the dataset's image LMDB (thumbnails)")
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--failures", type=int, default=8, help="how many queries or confused class pairs to show")
    parser.add_argument("--shown", type=int, default=5, help="retrieved items (or example images) per failure")
    parser.add_argument("--thumbnail", type=int, default=96, help="thumbnail size in pixels (long side)")
    retrieval = parser.add_argument_group("retrieval")
    retrieval.add_argument("--texts", type=Path, help="the dataset's texts.jsonl")
    retrieval.add_argument("--text-feats", type=Path)
    retrieval.add_argument("--ranks", type=Path, help="the score stage's ranks record")
    retrieval.add_argument("--t2i-output", type=Path, help="PNG; the failures shown as .json beside it")
    retrieval.add_argument("--i2t-output", type=Path)
    classification = parser.add_argument_group("classification")
    classification.add_argument("--class-feats", type=Path)
    classification.add_argument("--labels", type=Path)
    classification.add_argument("--classes", type=Path, help="classes.json")
    classification.add_argument("--confusion-output", type=Path, help="PNG; the matrix as .csv beside it")
    classification.add_argument("--pairs-output", type=Path)


def run(args):
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.errors import ClipevalError
    from clipeval.reporting.gallery_plots import Thumbnails

    for name in ("failures", "shown", "thumbnail"):
        if getattr(args, name) < 1:
            raise ClipevalError(f"--{name} must be at least 1")
    thumbnails = Thumbnails(ImageStore(args.images), args.thumbnail)
    if args.ranks:
        _retrieval(args, thumbnails)
    elif args.class_feats:
        _classification(args, thumbnails)
    else:
        raise ClipevalError("give --ranks with --texts and --text-feats (retrieval), or --class-feats with"
                            " --labels and --classes (classification)")


def _retrieval(args, thumbnails):
    from dataclasses import asdict

    import numpy as np

    from clipeval.data.captions import load_captions
    from clipeval.errors import ClipevalError
    from clipeval.features.feature_files import read_features
    from clipeval.reporting.failures import retrieval_failures
    from clipeval.reporting.gallery_plots import plot_image_to_text, plot_text_to_image
    from clipeval.retrieval.metrics import PROTOCOL_FOLD_SIZES, FeatureSet, split_folds
    from clipeval.statistics.comparison import read_ranks_record
    from clipeval.storage.jsonl import write_json

    if not (args.texts and args.text_feats and args.t2i_output and args.i2t_output):
        raise ClipevalError("retrieval needs --texts, --text-feats, --t2i-output and --i2t-output")
    record = read_ranks_record(args.ranks)
    if record["task"] != "retrieval":
        raise ClipevalError(f"{args.ranks}: a {record['task']} ranks record, not retrieval")
    captions = load_captions(args.texts)
    images = read_features(args.image_feats, "image_id")
    texts = read_features(args.text_feats, "text_id")
    folds = split_folds(captions, args.texts, FeatureSet(args.image_feats, *images),
                        PROTOCOL_FOLD_SIZES[record["protocol"]])
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    images_of = dict(zip(captions.text_ids.tolist(), captions.image_ids))
    captions_of = {}
    for text_id, image_ids in images_of.items():
        for image_id in image_ids.tolist():
            captions_of.setdefault(image_id, []).append(text_id)
    t2i = retrieval_failures(record, "t2i", texts, images, lambda text_id: images_of[text_id],
                             [fold_images for fold_images, _ in folds], args.failures, args.shown)
    i2t = retrieval_failures(record, "i2t", images, texts, lambda image_id: captions_of.get(image_id, []),
                             [np.sort(fold.text_ids) for _, fold in folds], args.failures, args.shown)
    plot_text_to_image(f"{args.title}: worst text → image queries", t2i, text_of, thumbnails, args.t2i_output)
    plot_image_to_text(f"{args.title}: worst image → text queries", i2t, text_of, captions_of, thumbnails,
                       args.i2t_output)
    for failures, output in ((t2i, args.t2i_output), (i2t, args.i2t_output)):
        write_json(output.with_suffix(".json"), [asdict(failure) for failure in failures])
    print(f"wrote {args.t2i_output} and {args.i2t_output}")


def _classification(args, thumbnails):
    import numpy as np

    from clipeval.classification.metrics import load_classification_inputs, ranked_classes
    from clipeval.errors import ClipevalError
    from clipeval.reporting import figures
    from clipeval.reporting.failures import confused_pairs, confusion_examples
    from clipeval.reporting.gallery_plots import plot_confused_pairs, plot_confusion

    if not (args.labels and args.classes and args.confusion_output and args.pairs_output):
        raise ClipevalError("classification needs --labels, --classes, --confusion-output and --pairs-output")
    given = load_classification_inputs(args.classes, args.labels, args.image_feats, args.class_feats)
    spec, image_ids, truth = given.spec, given.image_ids, given.labels
    predicted = ranked_classes(given.images, given.classes)[:, 0]
    confusion = np.zeros((len(spec.classnames), len(spec.classnames)), dtype=np.int64)
    np.add.at(confusion, (truth, predicted), 1)
    plot_confusion(f"{args.title}: confusion matrix", confusion, spec.classnames, args.confusion_output)
    figures.write_csv(figures.data_path(args.confusion_output), ["true \\ predicted", *spec.classnames],
                      [[name, *row] for name, row in zip(spec.classnames, confusion.tolist())])
    pairs = confused_pairs(truth, predicted, args.failures)
    examples = [confusion_examples(image_ids, truth, predicted, true, guess, args.shown) for true, guess, _ in pairs]
    plot_confused_pairs(f"{args.title}: most confused classes", pairs, examples, spec.classnames,
                        confusion.sum(axis=1), thumbnails, args.pairs_output)
    print(f"wrote {args.confusion_output} and {args.pairs_output}")
