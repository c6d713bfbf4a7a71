"""Recall formulas, each written once: R@K, mean recall and Rsum, in percent.

R@K is the percent of queries with a correct item among their first K.
Mean recall (Chinese-CLIP's score) is (R@1 + R@5 + R@10) / 3 of one
direction; Rsum is the sum of both directions' R@1, R@5 and R@10, and the
overall mean recall is Rsum / 6.
"""

import numpy as np

from clipeval.metric_catalog import RSUM_KS, recall_key
from clipeval.retrieval.ground_truth import GroundTruth
from clipeval.retrieval.predictions import PADDING


def recall_from_ranks(ranks: np.ndarray, ks) -> dict[str, float]:
    """R@K from the rank of each query's first correct item."""
    return {recall_key(k): float(100.0 * np.mean(ranks <= k)) for k in ks}


def hit_matrix(ranked: np.ndarray, truth: GroundTruth) -> np.ndarray:
    """hits[r, j]: the j-th prediction of query r is one of its positives."""
    base = int(max(ranked.max(initial=0), truth.positive_ids.max(initial=0))) + 1
    rows = np.arange(len(ranked), dtype=np.int64)[:, None]
    predicted_keys = np.where(ranked != PADDING, rows * base + ranked, -1)
    positive_keys = truth.owner.astype(np.int64) * base + truth.positive_ids
    return np.isin(predicted_keys, positive_keys)


def recall_from_hits(hits: np.ndarray, ks) -> dict[str, float]:
    """R@K from top-k lists' hit matrix (K beyond the lists' length counts the whole list)."""
    found_by = np.cumsum(hits, axis=1) > 0
    return {recall_key(k): float(100.0 * found_by[:, min(k, hits.shape[1]) - 1].mean()) for k in ks}


def first_hit_positions(hits: np.ndarray) -> np.ndarray:
    """1-based position of each row's first hit; 0 where the row has none."""
    return np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)


def mean_recall(recall: dict) -> float:
    return sum(recall[recall_key(k)] for k in RSUM_KS) / len(RSUM_KS)


def rsum(t2i: dict, i2t: dict) -> float:
    return sum(t2i[recall_key(k)] + i2t[recall_key(k)] for k in RSUM_KS)
