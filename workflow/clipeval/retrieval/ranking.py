"""Ranking metrics of retrieval from the rank of every positive: nDCG@K, MAP@K and MRR@K, in percent.

Relevance is binary: a query's positives are relevant, everything else is
not. With a query's P positives at ranks r_1 < r_2 < … (the ranking rule's
ranks over the whole gallery, so ties are already broken):

- nDCG@K = Σ_{r_i ≤ K} 1/log2(r_i + 1) over Σ_{i ≤ min(P, K)} 1/log2(i + 1),
  the DCG of the ideal ranking;
- MAP@K averages AP@K = (1/P) Σ_{r_i ≤ K} i / r_i, the precision at each
  positive found within K over all P positives (trec_eval's map_cut, which
  MIEB reports through pytrec_eval);
- MRR@K averages 1/r_1 where r_1 ≤ K, and 0 where the first positive is
  ranked beyond K.

Each is computed per query (one column per metric and K), and a metric is the
mean of its column, so bootstrap replicates resample these rows with the
first-positive ranks.
"""

import numpy as np

from clipeval.metric_catalog import RANKING_METRICS, ranking_key


def padded_ranks(owner: np.ndarray, ranks: np.ndarray, queries: int) -> np.ndarray:
    """(queries, most positives of one query): each query's positive ranks in increasing order, padded with
    0 (no positive) after them."""
    counts = np.bincount(owner, minlength=queries)
    order = np.lexsort((ranks, owner))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(len(owner)) - np.repeat(starts, counts)
    table = np.zeros((queries, int(counts.max(initial=0))), dtype=np.int64)
    table[owner[order], slot] = ranks[order]
    return table


def per_query_values(positive_ranks: np.ndarray, ranking_at) -> np.ndarray:
    """(queries, len(RANKING_METRICS) × len(ranking_at)) float64 percentages, in ranking_columns' order,
    from padded_ranks' table."""
    present = positive_ranks > 0
    counts = present.sum(axis=1)
    ranks = np.where(present, positive_ranks, 1).astype(np.float64)
    position = np.arange(1, positive_ranks.shape[1] + 1, dtype=np.float64)
    gains = 1.0 / np.log2(np.arange(1, max(ranking_at, default=1) + 1) + 1.0)
    ideal = np.concatenate([[0.0], np.cumsum(gains)])
    columns = []
    for k in sorted(set(ranking_at)):
        found = present & (positive_ranks <= k)
        dcg = np.where(found, 1.0 / np.log2(ranks + 1.0), 0.0).sum(axis=1)
        values = {
            "nDCG": dcg / ideal[np.minimum(counts, k)],
            "MAP": np.where(found, position / ranks, 0.0).sum(axis=1) / counts,
            "MRR": np.where(found[:, 0], 1.0 / ranks[:, 0], 0.0),
        }
        columns += [100.0 * values[name] for name in RANKING_METRICS]
    return np.column_stack(columns) if columns else np.zeros((len(positive_ranks), 0))


def ranking_columns(ranking_at) -> list[str]:
    """The names of per_query_values' columns: nDCG@10, MAP@10, MRR@10, … ."""
    return [ranking_key(name, k) for k in sorted(set(ranking_at)) for name in RANKING_METRICS]
