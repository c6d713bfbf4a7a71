"""Options several commands share."""

import argparse
from pathlib import Path

PRECISIONS = ("fp32", "fp16", "bf16", "amp")


def at_least(minimum):
    """An argparse type: an integer of `minimum` or more, else argparse's one-line error naming the option."""

    def integer(text) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value

    return integer


count = at_least(0)


def add_model_options(parser):
    parser.add_argument("--arch", required=True, help="an open_clip model name")
    parser.add_argument("--pretrained", default=None, help="open_clip tag or checkpoint path")
    parser.add_argument("--preprocess", help="JSON overriding open_clip's preprocess config")
    parser.add_argument("--precision", default="fp32", choices=PRECISIONS)


def add_compute_options(parser, workers=False):
    parser.add_argument("--batch-size", type=at_least(1), default=256, help="items per loader batch (a speed knob)")
    if workers:
        parser.add_argument("--num-workers", type=count, default=2, help="image decoding processes")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")


def add_interval_options(parser):
    parser.add_argument(
        "--bootstrap", type=count, default=1000, help="bootstrap replicates for 95%% intervals; 0: none"
    )
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")


def add_score_output_options(parser):
    """What both score commands share: provenance inputs, intervals, and their two outputs."""
    parser.add_argument("--dataset-meta", type=Path, help="the dataset's meta.json")
    parser.add_argument("--model-meta", type=Path, help="the describe-model output")
    parser.add_argument("--config", help="JSON of the config that produced this result, for provenance")
    add_interval_options(parser)
    parser.add_argument("--ranks-output", type=Path, help="per-query ranks, for paired comparisons")
    parser.add_argument("--output", type=Path, required=True)


def write_scores(args, metrics, record):
    from clipeval.storage.jsonl import write_json

    if args.ranks_output:
        write_json(args.ranks_output, record, compact=True)
    write_json(args.output, metrics)
