"""What the report plots of retrieval ranks: recall@K for every K, and how the ranks spread.

Both come from the ranks records of the score stage (the rank of each query's
first correct item in the whole gallery), so they hold beyond the top-k lists.
Under a folds protocol each fold's curve is computed on its own and the
curves are averaged, as the metrics are, so the curve at K = 1, 5, 10 is the
R@K of retrieval.json.
"""

import numpy as np

MAX_K = 100
# Bin edges (lower bounds) of the rank histogram: rank 1, 2, 3-5, 6-10, ... on a log scale.
RANK_BIN_STARTS = (1, 2, 3, 6, 11, 21, 51, 101, 201, 501, 1001, 2001, 5001, 10001, 20001, 50001, 100001)


def recall_curve(ranks: np.ndarray, folds: np.ndarray, max_k: int = MAX_K) -> np.ndarray:
    """Percent of queries whose first correct item is within the top K, K = 1..max_k, averaged over folds."""
    ks = np.arange(1, max_k + 1)
    per_fold = [100.0 * np.mean(ranks[folds == fold][:, None] <= ks[None, :], axis=0) for fold in np.unique(folds)]
    return np.mean(per_fold, axis=0)


def rank_histogram(ranks: np.ndarray, worst: int) -> list[tuple[int, int | None, int]]:
    """(lowest rank, highest rank or None for open-ended, queries) per bin, the bins up to rank `worst`
    (the worst of every model compared, so they share their bins)."""
    starts = [start for start in RANK_BIN_STARTS if start <= worst]
    bins = []
    for index, start in enumerate(starts):
        stop = starts[index + 1] - 1 if index + 1 < len(starts) else None
        inside = (ranks >= start) & (ranks <= stop) if stop is not None else ranks >= start
        bins.append((start, stop, int(inside.sum())))
    return bins


def bin_label(start: int, stop: int | None) -> str:
    if stop is None:
        return f"{start}+"
    return str(start) if start == stop else f"{start}–{stop}"
