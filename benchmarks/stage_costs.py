"""Where a finished run's CPU stages spend their time on this machine: the score stage and decoding.

Run after `peer.py --keep FOLDER`, on the same machine, with that folder. It
answers two questions a GPU node's first run raised (issue 58):

- score-retrieval: the job again, as Snakemake ran it (its command from a
  dry run, the thread variables Snakemake sets for a one-thread job), timed
  whole and then under cProfile, beside the float32 product it cannot avoid
  (captions × images, numpy) at one thread and at every core, and numpy's
  own account of its BLAS (numpy.show_runtime);
- decoding: one core's rate (decode, resize and crop in this process) against
  `clipeval decode-pixels` with a loader process per core but one, on all the
  run's images: the ratio is how far the pixel stage uses the machine.

Its output goes to the pixel and score folders of a temporary directory,
never into the run's results.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from measure import clipeval_command, exit_status, print_table

# What Snakemake's shell sets for a job of one thread (snakemake/shell.py).
ONE_THREAD = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "GOTO_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    )
}
PRODUCT = """
import sys, time
import numpy as np
rng = np.random.default_rng(0)
texts = rng.standard_normal((int(sys.argv[1]), 512), dtype=np.float32)
images = rng.standard_normal((int(sys.argv[2]), 512), dtype=np.float32)
texts @ images[:64].T
start = time.perf_counter()
texts @ images.T
print(time.perf_counter() - start)
"""
DECODED_ALONE = 300


def score_command(workdir: Path, scratch: Path) -> list[str]:
    """The score-retrieval job's command, as a dry run prints it, writing into `scratch` instead."""
    dry = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "-p",
            "--cores",
            "1",
            "--configfile",
            "peer.yaml",
            "--forcerun",
            "score_retrieval",
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        env={**os.environ, "CLIPEVAL_WARM_JOBS": "0"},
    )
    line = next(line for line in dry.stdout.splitlines() if "clipeval score-retrieval" in line)
    line = re.sub(r"\s*>.*$", "", line[line.index("python -m clipeval") :])
    words = subprocess.run(["bash", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True).stdout.split("\n")
    words = [word for word in words if word]
    for option, name in (("--output", "scores.json"), ("--ranks-output", "ranks.jsonl")):
        words[words.index(option) + 1] = str(scratch / name)
    return [sys.executable, *words[1:]]


def wall(command, cwd, env) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start, result.stdout


def product_seconds(threads: str, texts: int, images: int) -> float:
    env = {**os.environ, **{name: threads for name in ONE_THREAD}}
    result = subprocess.run(
        [sys.executable, "-c", PRODUCT, str(texts), str(images)], env=env, capture_output=True, text=True, check=True
    )
    return float(result.stdout)


def image_count(images: Path) -> int:
    from clipeval.data.image_lmdb import ImageStore

    return len(ImageStore(images).image_ids())


def one_core_rate(images: Path, recipe: str) -> float:
    """(images, images per second) decoded, resized and cropped in this process."""
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.features.pixels import ArrayOf, recipe_steps

    store = ImageStore(images)
    ids = store.image_ids()[:DECODED_ALONE]
    steps = ArrayOf(recipe_steps(recipe))
    start = time.perf_counter()
    for image_id in ids:
        steps(store.image(int(image_id)))
    return len(ids), len(ids) / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kept", type=Path, help="the folder peer.py --keep left")
    args = parser.parse_args(argv)
    workdir = args.kept / "clipeval"
    images = next((workdir / "results/datasets").glob("*/images.lmdb"))
    recipe = next((workdir / "results/pixels").glob("*/*")).name
    rows = []
    with tempfile.TemporaryDirectory(prefix="clipeval-stage-costs-") as scratch:
        scratch = Path(scratch)
        command = score_command(workdir, scratch)
        texts = sum(1 for _ in open(workdir / command[command.index("--texts") + 1], "rb"))
        gallery = image_count(images)
        seconds, _ = wall(command, workdir, ONE_THREAD)
        rows.append([f"score-retrieval, whole job, one thread ({texts:,} × {gallery:,})", f"{seconds:.2f}"])
        for threads in ("1", str(os.cpu_count())):
            product = product_seconds(threads, texts, gallery)
            rows.append([f"float32 product once, numpy, {threads} thread(s)", f"{product:.2f}"])
        profile = scratch / "score.prof"
        profiled = [sys.executable, "-m", "cProfile", "-o", str(profile), *command[1:]]
        wall(profiled, workdir, ONE_THREAD)
        alone, rate = one_core_rate(images, recipe)
        workers = max(1, (os.cpu_count() or 2) - 1)
        decode = [*clipeval_command("decode-pixels"), "--images", images, "--recipe", recipe,
                  "--num-workers", workers]  # fmt: skip
        start_seconds, _ = wall([*map(str, decode), "--shard-size", "1", "--output", str(scratch / "one")], workdir, {})
        decode_seconds, _ = wall([*map(str, decode), "--output", str(scratch / "pixels")], workdir, {})
        parallel_rate = (gallery - 1) / max(decode_seconds - start_seconds, 1e-9)
        rows += [
            [f"decode one core, in process ({alone} images), images/s", f"{rate:.0f}"],
            [f"decode-pixels, whole job, {workers} loader processes ({gallery:,} images), s", f"{decode_seconds:.1f}"],
            ["decode-pixels of one image (the job's start and end), s", f"{start_seconds:.1f}"],
            [
                "decode-pixels beyond its start and end, images/s",
                f"{parallel_rate:.0f} ({parallel_rate / rate:.1f}× one core)",
            ],
        ]
        import pstats

        print("\n### score-retrieval under cProfile: the 25 calls of most cumulative time\n\n```")
        pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(25)
        print("```")
    print("\n### numpy's runtime\n\n```")
    np.show_runtime()
    print("```")
    print_table(f"CPU stages on this machine ({os.cpu_count()} cores), seconds unless said", ["what", "value"], rows)


if __name__ == "__main__":
    sys.exit(exit_status(main))
