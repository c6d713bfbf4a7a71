"""`clipeval score-retrieval` against the float32 product it cannot avoid, up to 100k images × 500k captions.

Scoring ranks every query's first positive over the whole gallery, both
ways, so each direction computes the captions × images product once: the
floor is twice that product, computed as numpy does it in the same bounded
memory (64 MiB tiles of float32 scores; see ranks.py for the tile shape).
On the larger shapes the floor is timed on the first tiles of captions and
scaled to all of them: every tile has the same shape, and timing the whole
product would double the benchmark's time.

Each shape has five captions per image. The whole process runs as the
workflow's score rule runs it (1000 bootstrap replicates, ranks record
written), with top-k predictions to check at COCO-5K (made by
`make-topk-predictions` first; at the larger shapes they would take as long
as the scoring). The bootstrap is also timed alone, in process, on the
ranks the command wrote. The feature files lie in a results folder, as the
workflow's do, so the command reads their arrays from the sidecars the
workflow's writer leaves beside them, not by parsing the jsonl. Peak memory is the command's own, next to the size
of the two feature matrices it has to hold. Last, why the ranks cut a large
gallery into tiles: the product's speed per query row with 64 MiB of scores
held as whole gallery rows against the ranks' tiles.
"""

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import orjson
from measure import (
    CAPTIONS_PER_IMAGE,
    DIMENSION,
    best_seconds,
    clipeval_command,
    print_table,
    retrieval_features,
    run_command,
)

REPLICATES = 1000
# (captions, images); the README's retrieval benchmarks and a sweep up to the 100k × 500k target.
SHAPES = {
    "coco-5k": (25_000, 5_000),
    "coco-5k-near-equal": (25_000, 5_000),
    "gallery-10k": (50_000, 10_000),
    "gallery-25k": (125_000, 25_000),
    "gallery-50k": (250_000, 50_000),
    "gallery-100k": (500_000, 100_000),
}
# Farther from their images than the knn benchmark's captions: R@1 well below 100, as on real data.
NOISE = 5.0
# Shapes whose scores all sit close together, as a random-weight model's or an early epoch's do: each
# positive's float32 band holds hundreds of items, which the ranks score again.
NEAR_EQUAL = {"coco-5k-near-equal"}
NEAR_EQUAL_SPREAD = 0.02


def near_equal_features(n_texts, n_images, seed=0):
    """Unit features around one direction per side, caption i a little nearer image i // 5 than the rest."""
    rng = np.random.default_rng(seed)
    centre = rng.standard_normal(DIMENSION, dtype=np.float32)
    other = rng.standard_normal(DIMENSION, dtype=np.float32)
    images = centre + NEAR_EQUAL_SPREAD * rng.standard_normal((n_images, DIMENSION), dtype=np.float32)
    owners = np.arange(n_texts) // CAPTIONS_PER_IMAGE % n_images
    texts = other + NEAR_EQUAL_SPREAD * rng.standard_normal((n_texts, DIMENSION), dtype=np.float32)
    texts += 0.3 * (images[owners] - centre)
    images /= np.linalg.norm(images, axis=1, keepdims=True)
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    return images, texts


FLOOR_ROW_TILES = 8


def write_captions(path, n_texts, n_images):
    with open(path, "wb") as handle:
        for text_id in range(n_texts):
            image_id = text_id // CAPTIONS_PER_IMAGE % n_images
            handle.write(orjson.dumps({"text_id": text_id, "text": f"caption {text_id}", "image_ids": [image_id]}))
            handle.write(b"\n")


def tiled_product_seconds(queries, gallery, tile_rows, tile_columns, repeats):
    """Seconds for queries × gallery computed tile by tile into one reused buffer, as the ranks compute it."""
    buffer = np.empty(tile_rows * tile_columns, dtype=np.float32)

    def product():
        for start in range(0, len(queries), tile_rows):
            rows = queries[start : start + tile_rows]
            for column in range(0, len(gallery), tile_columns):
                block = gallery[column : column + tile_columns]
                np.matmul(rows, block.T, out=buffer[: len(rows) * len(block)].reshape(len(rows), len(block)))

    return best_seconds(product, repeats=repeats)


def ranks_tile(n_queries, n_gallery):
    """(rows, columns) of the ranks' tiles for this shape."""
    from clipeval.retrieval import ranks

    tile_columns = min(n_gallery, ranks.TILE_COLUMNS)
    return max(1, min(n_queries, ranks.BUDGET_BYTES // (4 * tile_columns))), tile_columns


def product_floor(texts, images):
    """Seconds for texts × images in the ranks' tiles (scaled from the first row tiles when there are more)."""
    tile_rows, tile_columns = ranks_tile(len(texts), len(images))
    sample = texts[: tile_rows * FLOOR_ROW_TILES]
    seconds = tiled_product_seconds(sample, images, tile_rows, tile_columns, 1 if len(sample) < len(texts) else 3)
    return seconds * len(texts) / len(sample)


def tile_shapes(n_gallery=500_000, n_queries=1024):
    """ms per query row of the float32 product against a large gallery, by how its 64 MiB of scores are cut."""
    from clipeval.retrieval import ranks

    gallery, queries = retrieval_features(n_queries, n_gallery)
    whole_rows = max(1, ranks.BUDGET_BYTES // (4 * n_gallery))
    shapes = {
        f"{whole_rows} queries × the whole gallery": (whole_rows, n_gallery),
        "the ranks' tiles: {} queries × {:,} items".format(*ranks_tile(n_queries, n_gallery)): ranks_tile(
            n_queries, n_gallery
        ),
    }
    return [
        [
            f"{what}, gallery of {n_gallery:,}",
            f"{1000 * tiled_product_seconds(queries, gallery, rows, columns, 2) / n_queries:.2f}",
        ]
        for what, (rows, columns) in shapes.items()
    ]


def bootstrap_seconds(ranks_path):
    from clipeval.retrieval.metrics import rank_samples, retrieval_statistic
    from clipeval.statistics.bootstrap import percentile_intervals

    record = orjson.loads(Path(ranks_path).read_bytes())
    samples = rank_samples(record)
    return best_seconds(
        lambda: percentile_intervals(retrieval_statistic(record["recall_at"]), samples, REPLICATES, 0), repeats=1
    )


def shape_row(shape, workdir):
    """The row of one shape, its files in `workdir`, which must be the working directory: the features lie in its
    results folder, as the workflow's do, so their sidecars are written and read (features/feature_files.py)."""
    from clipeval.features.feature_files import write_features

    workdir = workdir / "results"
    workdir.mkdir()
    n_texts, n_images = SHAPES[shape]
    if shape in NEAR_EQUAL:
        images, texts = near_equal_features(n_texts, n_images)
    else:
        images, texts = retrieval_features(n_texts, n_images, noise=NOISE)
    write_features(workdir / "images.jsonl", "image_id", np.arange(n_images), images)
    write_features(workdir / "text-features.jsonl", "text_id", np.arange(n_texts), texts)
    write_captions(workdir / "texts.jsonl", n_texts, n_images)
    floor = 2 * product_floor(texts, images)
    features_mib = (images.nbytes + texts.nbytes) / 2**20
    del images, texts
    features = ["--image-feats", workdir / "images.jsonl", "--text-feats", workdir / "text-features.jsonl"]
    checked = shape.startswith("coco-5k")
    predictions = []
    if checked:
        for direction in ("t2i", "i2t"):
            run_command(
                clipeval_command(
                    "make-topk-predictions",
                    *features,
                    "--top-k",
                    10,
                    "--direction",
                    direction,
                    "--device",
                    "cpu",
                    "--output",
                    workdir / f"{direction}.jsonl",
                ),
                repeats=1,
            )
            predictions += [f"--{direction}", workdir / f"{direction}.jsonl"]
    seconds, peak = run_command(
        clipeval_command(
            "score-retrieval",
            "--texts",
            workdir / "texts.jsonl",
            *features,
            *predictions,
            "--protocol",
            "full",
            "--recall-at",
            1,
            5,
            10,
            "--bootstrap",
            REPLICATES,
            "--seed",
            0,
            "--ranks-output",
            workdir / "ranks.json",
            "--output",
            workdir / "scores.json",
        ),
        repeats=3 if n_texts <= 25_000 else 1,
    )
    scores = orjson.loads((workdir / "scores.json").read_bytes())
    resampling = bootstrap_seconds(workdir / "ranks.json")
    return [
        f"{n_texts:,} × {n_images:,}" + (", near-equal scores" if shape in NEAR_EQUAL else ""),
        "yes" if checked else "no",
        f"{scores['t2i']['R@1']:.1f}",
        f"{floor:.2f}",
        f"{seconds:.2f}",
        f"{seconds / floor:.2f}",
        f"{resampling:.2f}",
        f"{peak:,.0f}",
        f"{features_mib:,.0f}",
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    args = parser.parse_args(argv)
    rows = []
    for shape in args.shapes:
        with tempfile.TemporaryDirectory() as workdir, contextlib.chdir(workdir):
            rows.append(shape_row(shape, Path(workdir)))
    print_table(
        f"score-retrieval, {REPLICATES} bootstrap replicates, CPU",
        [
            "captions × images",
            "predictions checked",
            "t2i R@1",
            "floor: product twice (s)",
            "whole process (s)",
            "× floor",
            "bootstrap alone (s)",
            "peak MiB",
            "features MiB",
        ],
        rows,
    )
    print_table("float32 product in 64 MiB of scores, by tile shape", ["tiles", "ms per query row"], tile_shapes())


if __name__ == "__main__":
    sys.exit(main())
