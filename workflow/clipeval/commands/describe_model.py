from pathlib import Path

from clipeval.commands._options import add_model_options
from clipeval.numerics import add_options as add_numerics_options
from clipeval.numerics import pin

HELP = "write a model's identity for provenance"
LIBRARIES = ("torch", "torchvision", "open_clip_torch", "transformers")


def add_arguments(parser):
    add_model_options(parser)
    add_numerics_options(parser)
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    from clipeval.models.build import check_arch, check_pretrained, weights_identity
    from clipeval.models.preprocessing import pixel_recipe
    from clipeval.numerics import code_path
    from clipeval.storage.jsonl import parse_json_option, write_json
    from clipeval.storage.provenance import library_versions

    check_arch(args.arch)
    check_pretrained(args.arch, args.pretrained)
    preprocess = parse_json_option(args.preprocess, "--preprocess")
    write_json(
        args.output,
        {
            "arch": args.arch,
            "pretrained": args.pretrained,
            "weights": weights_identity(args.arch, args.pretrained),
            "precision": args.precision,
            "preprocess": preprocess,
            "pixels": pixel_recipe(args.arch, args.pretrained, preprocess),
            "numerics": {"profile": args.numerics, **code_path()},
            "versions": library_versions(),
        },
    )
