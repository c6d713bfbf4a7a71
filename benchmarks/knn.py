"""knn against the float32 matrix-product floor, both directions, at the standard shapes.

For each shape: the plain product of the same shape (numpy, the floor), the
FAISS flat search alone, `top_k` in process with each search, and the whole
`clipeval make-topk-predictions` process from feature files, with its peak
memory. Ratios are to the floor measured in the same run.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from measure import SHAPES, best_seconds, clipeval_command, print_table, retrieval_features, run_command

TOP_K = 10


def direction_sides(images, texts, direction):
    return (texts, images) if direction == "t2i" else (images, texts)


def shape_rows(shape, directions, workdir):
    from clipeval.features.feature_files import write_features
    from clipeval.retrieval.topk import FaissSearch, Searcher, top_k

    n_texts, n_images = SHAPES[shape]
    images, texts = retrieval_features(n_texts, n_images)
    write_features(workdir / "images.jsonl", "image_id", np.arange(n_images), images)
    write_features(workdir / "texts.jsonl", "text_id", np.arange(n_texts), texts)
    rows = []
    for direction in directions:
        queries, gallery = direction_sides(images, texts, direction)
        ids = np.arange(len(gallery))
        floor = best_seconds(lambda: queries @ gallery.T)
        faiss_search = FaissSearch(gallery, "cpu")
        timed = {"FAISS flat search alone": best_seconds(lambda: faiss_search.search(queries, TOP_K))}
        for search in ("auto", "numpy", "faiss"):
            timed[f"top_k, {search} search"] = best_seconds(
                lambda: top_k(queries, gallery, ids, TOP_K, Searcher(gallery, "cpu", search)))
        process, memory = run_command(clipeval_command(
            "make-topk-predictions", "--image-feats", workdir / "images.jsonl", "--text-feats",
            workdir / "texts.jsonl", "--top-k", TOP_K, "--direction", direction, "--device", "cpu",
            "--output", workdir / f"{direction}.jsonl"))
        timed["make-topk-predictions, whole process"] = process
        label = f"{shape} {direction} ({len(queries):,} × {len(gallery):,})"
        rows.append([label, "float32 product (floor)", f"{floor:.3f}", "1.00", ""])
        for what, seconds in timed.items():
            peak = f"{memory:,.0f}" if what.startswith("make-topk") else ""
            rows.append([label, what, f"{seconds:.3f}", f"{seconds / floor:.2f}", peak])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for shape in args.shapes:
            directions = ("t2i",) if shape == "gallery-100k" else ("t2i", "i2t")
            rows += shape_rows(shape, directions, Path(workdir))
    print_table(f"knn, top-{TOP_K}, CPU", ["shape", "what", "seconds", "× floor", "peak MiB"], rows)


if __name__ == "__main__":
    sys.exit(main())
