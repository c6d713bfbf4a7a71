"""What every benchmark shares: timings, peak memory of a command, the data shapes and the table."""

import importlib
import os
import platform
import subprocess
import sys
import time

import numpy as np

# (queries per direction, gallery) at the shapes of the standard benchmarks: texts × images.
SHAPES = {
    "flickr30k-1k": (5_000, 1_000),
    "coco-5k": (25_000, 5_000),
    # A 100k-image gallery: 5k of its 500k captions query it (the full product would take minutes here).
    "gallery-100k": (5_000, 100_000),
}
DIMENSION = 512
CAPTIONS_PER_IMAGE = 5


def best_seconds(function, repeats=3):
    """The fastest of `repeats` runs: the least disturbed by the rest of the machine."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


# Linux starts a child's peak memory (ru_maxrss) at its parent's: exec keeps
# the peak of the memory image it replaces. This process holds features and
# products of hundreds of megabytes, so a small launcher starts each command
# and reports the command's own peak.
_LAUNCHER = """import os, subprocess, sys, time
start = time.perf_counter()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(process.pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
"""


def run_command(command, repeats=3, env=None):
    """(fastest wall seconds, its peak resident memory in MiB) of a command run `repeats` times."""
    best = (float("inf"), 0.0)
    for _ in range(repeats):
        result = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *map(str, command)],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        seconds, peak_mib, status = result.stdout.split()
        if int(status) != 0:
            raise SystemExit(f"{' '.join(map(str, command))} failed: {result.stderr[-2000:]}")
        best = min(best, (float(seconds), float(peak_mib)))
    return best


def clipeval_command(*args):
    return [sys.executable, "-m", "clipeval", *map(str, args)]


def retrieval_features(queries, gallery, seed=0, noise=1.5):
    """Unit float32 features shaped like a retrieval benchmark: caption i describes image
    i // CAPTIONS_PER_IMAGE, near it (the more `noise`, the farther); one caption in fifty repeats another
    exactly (real ties)."""
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((gallery, DIMENSION), dtype=np.float32)
    owners = np.arange(queries) // CAPTIONS_PER_IMAGE % gallery
    texts = images[owners] + noise * rng.standard_normal((queries, DIMENSION), dtype=np.float32)
    repeated = texts[1::50]
    repeated[:] = texts[::50][: len(repeated)]
    images /= np.linalg.norm(images, axis=1, keepdims=True)
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    return images, texts


def machine() -> str:
    """One line: CPU, cores, and the BLAS libraries numpy and faiss loaded with the kernels they picked."""
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    blas = []
    try:
        from threadpoolctl import threadpool_info

        importlib.import_module("faiss")  # loaded so that its bundled BLAS shows in the list

        for library in threadpool_info():
            if library.get("internal_api") in ("openblas", "mkl", "blis"):
                owner = "faiss" if "faiss" in library["filepath"] else "numpy"
                blas.append(
                    f"{owner}: {library['internal_api']} {library['version']}"
                    f" ({library.get('architecture', '?')} kernels)"
                )
    except ImportError:
        blas.append("threadpoolctl not installed: BLAS kernels unknown")
    return f"{cpu}, {os.cpu_count()} cores; " + "; ".join(blas)


def exit_status(main) -> int:
    """main()'s exit status; a setting this machine cannot run (a ClipevalError: a GPU that is not there,
    fp16 on the CPU) ends in its one-line message and status 1 rather than a traceback."""
    from clipeval.errors import ClipevalError

    try:
        return main()
    except ClipevalError as error:
        print(f"{os.path.basename(sys.argv[0])}: error: {error}", file=sys.stderr)
        return 1


def print_table(title, header, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    print(f"\n### {title}\n")
    for line in [header, ["-" * width for width in widths], *rows]:
        print("| " + " | ".join(str(cell).ljust(width) for cell, width in zip(line, widths)) + " |")
    sys.stdout.flush()
