"""Reading and writing feature files against the raw parse of the same jsonl.

The floor is what any reader of the interchange format pays: orjson parsing
every line, nothing else. `read_features` is what every stage that takes
features (knn, score, classify) runs: on the files `write_features` makes,
as the workflow's stages make them, it reads the sidecar after checking it
against the jsonl's sha256; on feature files from elsewhere it parses.
"""

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import orjson
from measure import SHAPES, best_seconds, print_table, retrieval_features


def raw_parse(path):
    with open(path, "rb") as handle:
        for line in handle:
            orjson.loads(line)


def shape_rows(shape, workdir):
    from clipeval.features.feature_files import OWN_RESULTS, read_features, sidecar_path, write_features

    n_texts, n_images = SHAPES[shape]
    images, texts = retrieval_features(n_texts, n_images)
    rows = []
    for side, id_key, matrix in (("images", "image_id", images), ("texts", "text_id", texts)):
        path = workdir / OWN_RESULTS / f"{side}.jsonl"  # sidecars are written and read only there
        ids = np.arange(len(matrix))
        write = best_seconds(lambda: write_features(path, id_key, ids, matrix), repeats=1)
        floor = best_seconds(lambda: raw_parse(path))
        with_sidecar = best_seconds(lambda: read_features(path, id_key))
        sidecar_path(path).unlink()
        parsed = best_seconds(lambda: read_features(path, id_key))
        label = f"{shape} {side} ({len(matrix):,} × {matrix.shape[1]}, {path.stat().st_size / 2**20:,.0f} MiB)"
        rows.append([label, "raw orjson parse (floor)", f"{floor:.3f}", "1.00"])
        rows.append([label, "read_features, checked sidecar", f"{with_sidecar:.3f}", f"{with_sidecar / floor:.2f}"])
        rows.append([label, "read_features, parse (no sidecar)", f"{parsed:.3f}", f"{parsed / floor:.2f}"])
        rows.append([label, "write_features (jsonl + sidecar)", f"{write:.3f}", f"{write / floor:.2f}"])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=["flickr30k-1k", "coco-5k"])
    args = parser.parse_args(argv)
    rows = []
    # Back to the folder it started in: make bench runs the next benchmark in the same process.
    with tempfile.TemporaryDirectory() as workdir, contextlib.chdir(workdir):
        (Path(workdir) / "results").mkdir()
        for shape in args.shapes:
            rows += shape_rows(shape, Path(workdir))
    print_table("feature files", ["files", "what", "seconds", "× floor"], rows)


if __name__ == "__main__":
    sys.exit(main())
