from pathlib import Path

from clipeval.models.numerics import add_options as add_numerics_options, pin

HELP = "train a CLIP from scratch on a prepared dataset"
LIBRARIES = ("torch", "open_clip_torch", "pillow", "numpy")


def add_arguments(parser):
    parser.add_argument("--arch", required=True)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--seed", type=int, required=True)
    add_numerics_options(parser)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    from clipeval.models.training import train_clip

    train_clip(args.arch, args.dataset, args.output, args.epochs, args.batch_size, args.lr, args.seed)
