from pathlib import Path

from clipeval.commands._gallery import add_gallery_options

HELP = "the report's failure gallery of one model on a retrieval dataset: its worst queries both ways"
LIBRARIES = ("numpy", "matplotlib", "mplfonts", "pillow")


def add_arguments(parser):
    add_gallery_options(parser)
    parser.add_argument("--texts", type=Path, required=True, help="the dataset's texts.jsonl")
    parser.add_argument("--text-feats", type=Path, required=True)
    parser.add_argument("--ranks", type=Path, required=True, help="the score stage's ranks record")
    parser.add_argument("--t2i-output", type=Path, required=True, help="PNG; the failures shown as .json beside it")
    parser.add_argument("--i2t-output", type=Path, required=True)


def run(args):
    from dataclasses import asdict

    from clipeval.commands._gallery import open_thumbnails
    from clipeval.data.captions import load_captions
    from clipeval.features.feature_files import read_features
    from clipeval.reporting.failures import require_retrieval_record, retrieval_gallery
    from clipeval.reporting.gallery_plots import plot_image_to_text, plot_text_to_image
    from clipeval.storage.jsonl import write_json
    from clipeval.storage.ranks_records import read_ranks_record

    thumbnails = open_thumbnails(args)
    record = read_ranks_record(args.ranks)
    require_retrieval_record(record, args.ranks)
    captions = load_captions(args.texts)
    images = (args.image_feats, *read_features(args.image_feats, "image_id"))
    texts = (args.text_feats, *read_features(args.text_feats, "text_id"))
    gallery = retrieval_gallery(record, args.ranks, captions, args.texts, images, texts, args.failures, args.shown)
    plot_text_to_image(
        f"{args.title}: worst text → image queries", gallery.t2i, gallery.text_of, thumbnails, args.t2i_output
    )
    plot_image_to_text(
        f"{args.title}: worst image → text queries",
        gallery.i2t,
        gallery.text_of,
        gallery.captions_of,
        thumbnails,
        args.i2t_output,
    )
    for failures, output in ((gallery.t2i, args.t2i_output), (gallery.i2t, args.i2t_output)):
        write_json(output.with_suffix(".json"), [asdict(failure) for failure in failures])
    print(f"wrote {args.t2i_output} and {args.i2t_output}")
