from pathlib import Path

from clipeval.commands._options import at_least, count
from clipeval.errors import ClipevalError
from clipeval.numerics import add_options as add_numerics_options
from clipeval.numerics import pin, pins_training

HELP = "train a CLIP on a prepared dataset, from random weights or from pretrained ones (a fine-tune)"
LIBRARIES = ("torch", "open_clip_torch", "transformers", "pillow", "numpy")
TOWERS = ("image", "text")
PRECISIONS = ("fp32", "bf16", "amp")


def non_negative(text) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(text)
    return value


def add_arguments(parser):
    parser.add_argument("--arch", required=True)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--epochs", type=at_least(1), required=True)
    parser.add_argument("--batch-size", type=at_least(2), required=True, help="2 or more: the loss contrasts pairs")
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--seed", type=count, required=True)
    parser.add_argument("--from", dest="start_from", help="the weights to start from: an open_clip tag or a checkpoint")
    parser.add_argument("--warmup", type=count, help="steps of linear warm-up (default: one epoch's)")
    parser.add_argument("--weight-decay", type=non_negative, default=0.1)
    parser.add_argument("--freeze", nargs="+", choices=TOWERS, default=[], help="towers whose weights stay as they are")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--stop-after", type=at_least(1), help="the epoch to stop after (default: the last)")
    parser.add_argument("--resume", type=Path, help="the state a training stopped after the epoch before wrote")
    parser.add_argument("--state-output", type=Path, help="where to write the state the next epoch resumes from")
    add_numerics_options(parser)


def run(args):
    if not pins_training(args.numerics, args.precision, args.device):
        raise ClipevalError(
            f"--precision {args.precision} on the CPU is outside --numerics portable, whose training is the same"
            " bits on every CPU: train in fp32, on a GPU (--device cuda), or under --numerics native"
        )
    pin(args.numerics, args.threads)  # before anything imports torch
    from clipeval.models.training import TrainingSettings, train_clip

    settings = TrainingSettings(
        arch=args.arch,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
        start_from=args.start_from,
        warmup_steps=args.warmup,
        weight_decay=args.weight_decay,
        freeze=tuple(args.freeze),
        precision=args.precision,
        device=args.device,
    )
    train_clip(settings, args.dataset, args.output, args.stop_after, args.resume, args.state_output)
