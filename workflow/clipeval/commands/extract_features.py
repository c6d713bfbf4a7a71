from pathlib import Path

from clipeval.commands._options import add_compute_options, add_model_options, count
from clipeval.features.pixel_files import open_stored_pixels  # no torch: it must load after pin()
from clipeval.numerics import add_options as add_numerics_options
from clipeval.numerics import pin

HELP = "encode a dataset's images and/or captions"
LIBRARIES = ("torch", "torchvision", "open_clip_torch", "transformers", "pillow")


def add_arguments(parser):
    add_model_options(parser)
    parser.add_argument("--images", type=Path, help="image LMDB directory")
    parser.add_argument("--texts", type=Path, help="texts.jsonl")
    parser.add_argument("--image-output", type=Path)
    parser.add_argument("--text-output", type=Path)
    parser.add_argument(
        "--tokenization-output",
        type=Path,
        help="with --text-output: a JSON record of the captions the tokenizer cuts or cannot fully represent",
    )
    parser.add_argument("--shard-size", type=count, default=0, help="images per shard; 0 (default): one shard")
    parser.add_argument("--shard-index", type=count, default=0)
    parser.add_argument(
        "--pixels",
        type=Path,
        nargs="+",
        help="pixel shard folders (decode-pixels) holding this shard's images, read instead of decoding them",
    )
    add_compute_options(parser, workers=True)
    add_numerics_options(parser)


def run(args):
    pin(args.numerics, args.threads)  # before anything imports torch
    from clipeval.data.captions import load_captions
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.errors import ClipevalError
    from clipeval.features.encode import iter_image_features, iter_text_features
    from clipeval.features.feature_files import write_feature_batches
    from clipeval.features.sharding import shard_bounds
    from clipeval.features.tokenization import caption_fits, tokenization_record
    from clipeval.models.build import build_model, resolve_device
    from clipeval.storage.jsonl import parse_json_option

    if not (args.image_output or args.text_output):
        raise ClipevalError("nothing to do: give --image-output, --text-output or both")
    if args.image_output and not args.images:
        raise ClipevalError("--image-output needs --images")
    if args.text_output and not args.texts:
        raise ClipevalError("--text-output needs --texts")
    if args.tokenization_output and not args.text_output:
        raise ClipevalError("--tokenization-output needs --text-output")
    device = resolve_device(args.device)
    captions = load_captions(args.texts) if args.text_output else None
    store = ImageStore(args.images) if args.image_output else None
    image_ids = store.image_ids() if store else None
    start, stop = shard_bounds(len(image_ids), args.shard_index, args.shard_size) if store else (0, 0)
    model, transform, tokenizer = build_model(
        args.arch, args.pretrained, device=device, preprocess=parse_json_option(args.preprocess, "--preprocess")
    )
    speed = {"batch_size": args.batch_size, "device": device, "precision": args.precision}
    if store:
        pixels = stored_pixels(args.pixels, model, transform, image_ids) if args.pixels else None
        batches = iter_image_features(
            model,
            transform,
            store,
            image_ids,
            start=start,
            stop=stop,
            num_workers=args.num_workers,
            pixels=pixels,
            **speed,
        )
        write_feature_batches(args.image_output, "image_id", batches)
    if captions:
        batches = iter_text_features(model, tokenizer, captions.text_ids, captions.texts, **speed)
        write_feature_batches(args.text_output, "text_id", batches)
        if args.tokenization_output:
            record = tokenization_record(
                captions.text_ids, caption_fits(tokenizer, captions.texts), tokenizer.context_length
            )
            write_tokenization(args.tokenization_output, record)


def write_tokenization(path, record):
    """The tokenization record (features/tokenization.py), and a line in the log when a caption was cut or
    holds unknown tokens."""
    from clipeval.storage.jsonl import write_json

    if record["cut"] or record["with_unknown_tokens"]:
        print(
            f"note: of {record['captions']} captions, {record['cut']} need more than the model's"
            f" {record['context_length']} tokens and are cut, {record['with_unknown_tokens']} hold text the"
            " tokenizer cannot represent (unknown tokens)"
        )
    write_json(path, record)


def stored_pixels(folders, model, transform, image_ids):
    """The stored pixels of these shard folders, checked against the model's own preprocessing; None when they
    hold none (then the images are decoded here)."""
    import open_clip

    from clipeval.errors import ClipevalError
    from clipeval.features.pixels import model_recipe

    recipe = model_recipe(open_clip.get_model_preprocess_cfg(model), transform)
    if recipe is None:
        raise ClipevalError("--pixels given for a model whose preprocessing has no pixel recipe")
    pixels = open_stored_pixels(folders, recipe, image_ids)
    print(
        f"images: {'pixels of ' + recipe + ' read from' if pixels else 'decoded here; no pixels stored in'}"
        f" {', '.join(map(str, folders))}",
        flush=True,
    )
    return pixels
