"""Splitting array work over the threads a job was given.

numpy, hashlib and FAISS let go of the GIL inside their loops, so plain
threads run their calls at once, without copying arrays between processes.
"""

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def compute_threads() -> int:
    """The threads the job was given (Snakemake sets OMP_NUM_THREADS, which numpy's BLAS follows too),
    else the cores this process may use."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, int(given)) if given.isascii() and given.isdigit() else len(os.sched_getaffinity(0))


def row_parts(count: int) -> list:
    """range(count) as compute_threads() contiguous (start, stop) parts of nearly equal size, none empty."""
    bounds = np.linspace(0, count, compute_threads() + 1).astype(np.int64)
    return [(int(start), int(stop)) for start, stop in zip(bounds[:-1], bounds[1:]) if stop > start]


def in_threads(function, parts) -> list:
    """[function(start, stop) for each part], the parts spread over compute_threads() threads. The parts
    must not depend on each other: then how they are spread does not change a bit of the results."""
    workers = min(len(parts), compute_threads())
    if workers < 2:
        return [function(*part) for part in parts]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda part: function(*part), parts))


def ordered_map(function, items, ahead_per_thread: int = 4):
    """function(item) for each item, in order, computed in compute_threads() threads with at most
    ahead_per_thread items per thread in flight (their results held in memory). An item's exception is
    raised at its place in the order, after every earlier item's result: what a plain loop would do."""
    workers = compute_threads()
    if workers < 2:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(workers) as pool:
        pending = deque()
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                if len(pending) >= workers * ahead_per_thread:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # an error or a consumer that stopped early: start nothing more
                future.cancel()
