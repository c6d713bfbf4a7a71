"""Options and set-up both failure-gallery commands share."""

from pathlib import Path


def add_gallery_options(parser):
    parser.add_argument("--title", required=True, help="MODEL on DATASET, for the figures' titles")
    parser.add_argument("--images", type=Path, required=True, help="the dataset's image LMDB (thumbnails)")
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--failures", type=int, default=8, help="how many queries or confused class pairs to show")
    parser.add_argument("--shown", type=int, default=5, help="retrieved items (or example images) per failure")
    parser.add_argument("--thumbnail", type=int, default=96, help="thumbnail size in pixels (long side)")


def open_thumbnails(args):
    """The dataset's thumbnails, once the counts are checked."""
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.errors import ClipevalError
    from clipeval.reporting.gallery_plots import Thumbnails

    for name in ("failures", "shown", "thumbnail"):
        if getattr(args, name) < 1:
            raise ClipevalError(f"--{name} must be at least 1")
    return Thumbnails(ImageStore(args.images), args.thumbnail)
