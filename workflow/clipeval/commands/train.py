from pathlib import Path

from clipeval.commands._options import at_least, count
from clipeval.numerics import add_options as add_numerics_options
from clipeval.numerics import pin

HELP = "train a CLIP from scratch on a prepared dataset"
LIBRARIES = ("torch", "open_clip_torch", "transformers", "pillow", "numpy")


def add_arguments(parser):
    parser.add_argument("--arch", required=True)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--epochs", type=at_least(1), required=True)
    parser.add_argument("--batch-size", type=at_least(2), required=True, help="2 or more: the loss contrasts pairs")
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--seed", type=count, required=True)
    add_numerics_options(parser)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    from clipeval.models.training import train_clip

    train_clip(args.arch, args.dataset, args.output, args.epochs, args.batch_size, args.lr, args.seed)
