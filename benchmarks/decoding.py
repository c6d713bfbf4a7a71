"""decode-pixels by the number of its decoding processes, against one core's rate.

The floor is one core's rate: the pixel recipe's PIL steps (decode, resize,
crop) over every image, one after another in this process. Against it,
`clipeval decode-pixels` run in this process as a warm job's fork runs it
(its imports already done, so the rows compare decoding, not interpreter
starts) with 1, 2, 4, … loader processes up to the cores this process may
use. The workflow gives the job every core the extraction job beside it
leaves (at least two), one process each. Every row's pixels are checked to
be the floor's bits.

The images are photo-like JPEGs at COCO's usual size (640 × 480) from
extraction.py, the recipe open_clip's ViT-B-32 eval preprocessing
(224 × 224, shortest side resized, bicubic, centre crop).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from extraction import photo_like_jpegs
from measure import print_table

from clipeval.commands._options import at_least

RECIPE = "224x224-shortest-bicubic-fill0"


def process_counts(cores: int) -> list[int]:
    """1, 2, 4, … and `cores` itself."""
    counts, count = [], 1
    while count < cores:
        counts.append(count)
        count *= 2
    return [*counts, cores]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=at_least(1), default=512, help="images in the store")
    parser.add_argument(
        "--cores", type=at_least(1), default=len(os.sched_getaffinity(0)), help="most processes (default: all)"
    )
    args = parser.parse_args(argv)

    from clipeval.cli import main as clipeval
    from clipeval.data.image_lmdb import ImageStore, write_image_store
    from clipeval.features.pixel_files import PIXELS
    from clipeval.features.pixels import ArrayOf, recipe_steps

    with tempfile.TemporaryDirectory() as workdir:
        store_path = Path(workdir) / "images.lmdb"
        write_image_store(store_path, enumerate(photo_like_jpegs(args.images)))
        store = ImageStore(store_path)
        steps = ArrayOf(recipe_steps(RECIPE))
        start = time.perf_counter()
        floor = np.stack([steps(store.image(int(image_id))) for image_id in store.image_ids()])
        one_core = args.images / (time.perf_counter() - start)
        store.close()  # each process opens its own
        rows = [["the recipe's PIL steps in this process (floor)", f"{one_core:.1f}", "1.00"]]
        for processes in process_counts(args.cores):
            output = Path(workdir) / f"pixels-{processes}"
            words = ["--images", store_path, "--recipe", RECIPE, "--num-workers", processes, "--output", output]
            start = time.perf_counter()
            if clipeval(["decode-pixels", *map(str, words)]) != 0:
                raise SystemExit(f"decode-pixels with {processes} processes failed")
            rate = args.images / (time.perf_counter() - start)
            if not np.array_equal(np.load(output / PIXELS), floor):
                raise SystemExit(f"decode-pixels with {processes} processes made other pixels than the floor")
            rows.append([f"decode-pixels, {processes} loader processes", f"{rate:.1f}", f"{rate / one_core:.2f}"])
    title = f"decode-pixels by loader processes, {args.images} JPEGs of 640 × 480 to {RECIPE}, CPU"
    print_table(f"{title}, {len(os.sched_getaffinity(0))} cores", ["what", "images/s", "× one core"], rows)


if __name__ == "__main__":
    sys.exit(main())
