from pathlib import Path

from ..numerics import add_options as add_numerics_options, pin
from ._options import add_model_options

HELP = "write a model's identity for provenance"


def add_arguments(parser):
    add_model_options(parser)
    add_numerics_options(parser)
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    from ..jsonl import parse_json_option, write_json
    from ..model import check_arch, check_pretrained, weights_identity
    from ..numerics import code_path
    from ..provenance import library_versions

    check_arch(args.arch)
    check_pretrained(args.arch, args.pretrained)
    write_json(args.output, {
        "arch": args.arch,
        "pretrained": args.pretrained,
        "weights": weights_identity(args.pretrained),
        "precision": args.precision,
        "preprocess": parse_json_option(args.preprocess, "--preprocess"),
        "numerics": {"profile": args.numerics, **code_path()},
        "versions": library_versions(),
    })
