from pathlib import Path

HELP = "the report's failure gallery of one model on a compositionality set: each image's wrong choices"
LIBRARIES = ("numpy", "matplotlib", "mplfonts", "pillow")


def add_arguments(parser):
    parser.add_argument("--title", required=True, help="MODEL on DATASET, for the figure's title")
    parser.add_argument("--images", type=Path, required=True, help="the dataset's image LMDB (thumbnails)")
    parser.add_argument("--texts", type=Path, required=True, help="the dataset's texts.jsonl")
    parser.add_argument("--examples", type=Path, required=True, help="the dataset's examples.jsonl")
    parser.add_argument("--ranks", type=Path, required=True, help="score-compositionality's --ranks-output")
    parser.add_argument("--failures", type=int, default=8, help="how many examples to show")
    parser.add_argument("--thumbnail", type=int, default=96, help="thumbnail size in pixels (long side)")
    parser.add_argument("--output", type=Path, required=True, help="PNG (its rows as .csv beside it)")


def run(args):
    from clipeval.data.captions import load_captions
    from clipeval.data.choices import load_examples
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.errors import ClipevalError
    from clipeval.reporting.choice_failures import plot_choice_failures
    from clipeval.reporting.gallery_plots import Thumbnails
    from clipeval.storage.ranks_records import read_ranks_record

    for name in ("failures", "thumbnail"):
        if getattr(args, name) < 1:
            raise ClipevalError(f"--{name} must be at least 1")
    record = read_ranks_record(args.ranks)
    if record["task"] != "compositionality":
        raise ClipevalError(f"{args.ranks}: a {record['task']} ranks record, not a compositionality one")
    examples = {
        e.example_id: {
            "image_ids": list(e.image_ids),
            "text_ids": list(e.text_ids),
            **({} if e.associations is None else {"associations": list(e.associations)}),
        }
        for e in load_examples(args.examples)
    }
    unknown = [example_id for example_id in record["example_ids"] if example_id not in examples]
    if unknown:
        raise ClipevalError(f"{args.ranks}: example {unknown[0]} is not in {args.examples}")
    captions = load_captions(args.texts)
    texts = dict(zip(captions.text_ids.tolist(), captions.texts))
    thumbnails = Thumbnails(ImageStore(args.images), args.thumbnail)
    plot_choice_failures(args.title, record, examples, texts, thumbnails, args.failures, args.output)
    print(f"wrote {args.output}")
