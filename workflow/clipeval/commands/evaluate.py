from pathlib import Path

from clipeval.metric_catalog import DEFAULT_RECALL_AT

HELP = "Chinese-CLIP compatible recall of one prediction file"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("ground_truth", type=Path, help="texts jsonl (t2i), or its image_id/text_ids form (i2t)")
    parser.add_argument("predictions", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--direction", choices=("t2i", "i2t"), default="t2i")
    parser.add_argument("--recall-at", type=int, nargs="+", default=list(DEFAULT_RECALL_AT))


def run(args):
    from clipeval.retrieval.cnclip_scorer import evaluate, load_ground_truth
    from clipeval.retrieval.predictions import load_predictions
    from clipeval.storage.jsonl import write_json

    result = evaluate(
        load_ground_truth(args.ground_truth, args.direction),
        load_predictions(args.predictions, args.direction),
        args.recall_at,
    )
    write_json(args.output, result)
    print(f"{args.direction}: {result['scoreJson']}")
