from pathlib import Path

from clipeval.commands._options import add_compute_options, add_model_options
from clipeval.numerics import add_options as add_numerics_options
from clipeval.numerics import pin

HELP = "class embeddings from class names × prompt templates"
LIBRARIES = ("torch", "open_clip_torch", "transformers")


def add_arguments(parser):
    add_model_options(parser)
    parser.add_argument("--classes", type=Path, required=True, help="classes.json")
    parser.add_argument("--output", type=Path, required=True)
    add_compute_options(parser)
    add_numerics_options(parser)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    import numpy as np

    from clipeval.classification.metrics import class_embeddings, load_classes, prompts_for
    from clipeval.features.encode import encode_texts
    from clipeval.features.feature_files import write_features
    from clipeval.models.build import build_model, resolve_device
    from clipeval.storage.jsonl import parse_json_option

    spec = load_classes(args.classes)
    device = resolve_device(args.device)
    model, _, tokenizer = build_model(
        args.arch, args.pretrained, device=device, preprocess=parse_json_option(args.preprocess, "--preprocess")
    )
    prompts = prompts_for(spec)
    _, prompt_matrix = encode_texts(
        model,
        tokenizer,
        np.arange(len(prompts)),
        prompts,
        batch_size=args.batch_size,
        device=device,
        precision=args.precision,
    )
    classes = class_embeddings(prompt_matrix, len(spec.classnames))
    write_features(args.output, "class_id", np.arange(len(classes)), classes)
    print(f"encoded {len(spec.classnames)} classes from {len(prompts)} prompts")
