from pathlib import Path

from clipeval.commands._options import count

HELP = "decode, resize and crop a dataset's images once, into the uint8 pixels of one preprocessing recipe"
LIBRARIES = ("torch", "torchvision", "open_clip_torch", "pillow")


def add_arguments(parser):
    parser.add_argument("--images", type=Path, required=True, help="image LMDB directory")
    parser.add_argument("--recipe", required=True, help="what decides the pixels, e.g. 224x224-shortest-bicubic-fill0")
    parser.add_argument("--shard-size", type=count, default=0, help="images per shard; 0 (default): one shard")
    parser.add_argument("--shard-index", type=count, default=0)
    parser.add_argument(
        "--store",
        choices=("yes", "no"),
        default="yes",
        help="no: write only the manifest (extraction then decodes the images itself)",
    )
    parser.add_argument("--num-workers", type=count, default=2, help="image decoding processes")
    parser.add_argument("--output", type=Path, required=True, help="the shard's folder")


def run(args):
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.features.image_loader import image_batches
    from clipeval.features.pixel_files import write_pixel_shard
    from clipeval.features.pixels import ArrayOf, recipe_of, recipe_steps
    from clipeval.features.sharding import FORWARD_BLOCK, shard_bounds

    size = recipe_of(args.recipe)["image_size"]
    store = ImageStore(args.images)
    image_ids = store.image_ids()
    start, stop = shard_bounds(len(image_ids), args.shard_index, args.shard_size)
    ids = image_ids[start:stop]
    if args.store == "no":
        write_pixel_shard(args.output, args.recipe, start, ids, iter(()))
        return
    batches = image_batches(
        store,
        ids,
        ArrayOf(recipe_steps(args.recipe)),
        batch_size=FORWARD_BLOCK,
        num_workers=args.num_workers,
        device="cpu",
    )
    write_pixel_shard(args.output, args.recipe, start, ids, (batch.numpy() for batch in batches), shape=size)
