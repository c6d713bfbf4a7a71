"""Check that models can be built as configured, before any job runs: the workflow runs it as a run starts."""

import sys

HELP = "check models' arch, pretrained tag or checkpoint fit, and precision for the device, without loading weights"
LIBRARIES = ("torch", "open_clip_torch", "transformers")
FIELDS = ("NAME", "ARCH", "PRETRAINED", "PRECISION", "PRECISION_KEY", "DEVICE", "WEIGHTS_KEY")


def add_arguments(parser):
    parser.add_argument(
        "--model",
        nargs=len(FIELDS),
        action="append",
        default=[],
        metavar=FIELDS,
        help="a model as the config names it: PRETRAINED '' for none, PRECISION_KEY the config key the precision"
        " comes from, DEVICE - to leave the precision unchecked (another machine runs the jobs), WEIGHTS_KEY the"
        " config key PRETRAINED comes from (models.NAME.pretrained, or a fine-tune's models.NAME.train.from)",
    )


def run(args):
    from clipeval.models.model_check import model_problem

    problems = []
    for name, arch, pretrained, precision, precision_key, device, weights_key in args.model:
        device = None if device == "-" else device
        problem = model_problem(name, arch, pretrained or None, precision, precision_key, device, weights_key)
        if problem:
            problems.append(problem)
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
