from pathlib import Path

from clipeval.commands._gallery import add_gallery_options

HELP = "the report's failure gallery of one model on a retrieval dataset: its worst queries both ways"
LIBRARIES = ("numpy", "matplotlib", "pillow")


def add_arguments(parser):
    add_gallery_options(parser)
    parser.add_argument("--texts", type=Path, required=True, help="the dataset's texts.jsonl")
    parser.add_argument("--text-feats", type=Path, required=True)
    parser.add_argument("--ranks", type=Path, required=True, help="the score stage's ranks record")
    parser.add_argument("--t2i-output", type=Path, required=True, help="PNG; the failures shown as .json beside it")
    parser.add_argument("--i2t-output", type=Path, required=True)


def run(args):
    from dataclasses import asdict

    import numpy as np

    from clipeval.commands._gallery import open_thumbnails
    from clipeval.data.captions import load_captions
    from clipeval.errors import ClipevalError
    from clipeval.features.feature_files import read_features
    from clipeval.reporting.failures import retrieval_failures
    from clipeval.reporting.gallery_plots import plot_image_to_text, plot_text_to_image
    from clipeval.retrieval.metrics import PROTOCOL_FOLD_SIZES, FeatureSet, split_folds
    from clipeval.statistics.comparison import read_ranks_record
    from clipeval.storage.jsonl import write_json

    thumbnails = open_thumbnails(args)
    record = read_ranks_record(args.ranks)
    if record["task"] != "retrieval":
        raise ClipevalError(f"{args.ranks}: a {record['task']} ranks record, not retrieval")
    captions = load_captions(args.texts)
    images = read_features(args.image_feats, "image_id")
    texts = read_features(args.text_feats, "text_id")
    for direction, (ids, _), path in (("t2i", texts, args.text_feats), ("i2t", images, args.image_feats)):
        missing = set(record[direction]["query_ids"]) - set(ids.tolist())
        if missing:
            raise ClipevalError(f"{args.ranks}: {direction} query id {min(missing)} has no features in {path}")
    folds = split_folds(
        captions, args.texts, FeatureSet(args.image_feats, *images), PROTOCOL_FOLD_SIZES[record["protocol"]]
    )
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    images_of = dict(zip(captions.text_ids.tolist(), captions.image_ids))
    captions_of = {}
    for text_id, image_ids in images_of.items():
        for image_id in image_ids.tolist():
            captions_of.setdefault(image_id, []).append(text_id)
    t2i = retrieval_failures(
        record,
        "t2i",
        texts,
        images,
        lambda text_id: images_of[text_id],
        [fold_images for fold_images, _ in folds],
        args.failures,
        args.shown,
    )
    i2t = retrieval_failures(
        record,
        "i2t",
        images,
        texts,
        lambda image_id: captions_of.get(image_id, []),
        [np.sort(fold.text_ids) for _, fold in folds],
        args.failures,
        args.shown,
    )
    plot_text_to_image(f"{args.title}: worst text → image queries", t2i, text_of, thumbnails, args.t2i_output)
    plot_image_to_text(
        f"{args.title}: worst image → text queries", i2t, text_of, captions_of, thumbnails, args.i2t_output
    )
    for failures, output in ((t2i, args.t2i_output), (i2t, args.i2t_output)):
        write_json(output.with_suffix(".json"), [asdict(failure) for failure in failures])
    print(f"wrote {args.t2i_output} and {args.i2t_output}")
