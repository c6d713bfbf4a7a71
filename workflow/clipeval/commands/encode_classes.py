from pathlib import Path

from ..numerics import add_options as add_numerics_options, pin
from ._options import add_compute_options, add_model_options

HELP = "class embeddings from class names × prompt templates"


def add_arguments(parser):
    add_model_options(parser)
    parser.add_argument("--classes", type=Path, required=True, help="classes.json")
    parser.add_argument("--output", type=Path, required=True)
    add_compute_options(parser)
    add_numerics_options(parser)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    import numpy as np

    from ..classification import class_embeddings, load_classes, prompts_for
    from ..extract import encode_texts
    from ..features import write_features
    from ..jsonl import parse_json_option
    from ..model import build_model, resolve_device

    spec = load_classes(args.classes)
    device = resolve_device(args.device)
    model, _, tokenizer = build_model(
        args.arch, args.pretrained, device=device, preprocess=parse_json_option(args.preprocess, "--preprocess")
    )
    prompts = prompts_for(spec)
    _, prompt_matrix = encode_texts(model, tokenizer, np.arange(len(prompts)), prompts,
                                    batch_size=args.batch_size, device=device, precision=args.precision)
    classes = class_embeddings(prompt_matrix, len(spec.classnames))
    write_features(args.output, "class_id", np.arange(len(classes)), classes)
    print(f"encoded {len(spec.classnames)} classes from {len(prompts)} prompts")
