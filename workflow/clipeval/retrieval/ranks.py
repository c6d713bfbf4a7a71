"""The rank of each query's first correct item in the full ranking.

Ranks follow the ranking rule (ranking_rule.py) over the whole gallery, not the top-k
lists, so they are right beyond K: the rank of an item is
1 + #(score > s) + #(score == s and id < own id), and a query's rank is that
of its best-ranked positive. float32 matrix products sort the gallery into
items clearly ahead, clearly behind, and a narrow band around the positive's
score; the band is scored exactly (exact_pair_scores), like the top-k lists.
"""

import numpy as np

from clipeval.retrieval.ranking_rule import exact_pair_scores, score_tolerance

_BUDGET_BYTES = 64 << 20


def best_positives(queries, gallery, gallery_ids, owner, positive_rows):
    """Per query row: (score, id) of its best positive under the ranking rule."""
    scores = exact_pair_scores(queries, gallery, owner, positive_rows)
    ids = gallery_ids[positive_rows]
    order = np.lexsort((ids, -scores, owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = owner[order][1:] != owner[order][:-1]
    chosen = order[first]
    best_score = np.full(len(queries), -np.inf)
    best_id = np.zeros(len(queries), dtype=np.int64)
    best_score[owner[chosen]] = scores[chosen]
    best_id[owner[chosen]] = ids[chosen]
    return best_score, best_id


def first_positive_ranks(queries, gallery, gallery_ids, owner, positive_ids) -> np.ndarray:
    """1-based rank of each query's best positive.

    queries[r] owns the positives positive_ids[owner == r]; every query must
    own at least one, and every positive must be in gallery_ids.
    """
    order = np.argsort(gallery_ids, kind="stable")
    positive_rows = order[np.searchsorted(gallery_ids[order], positive_ids)]
    best_score, best_id = best_positives(queries, gallery, gallery_ids, owner, positive_rows)
    # The float32 product may sit off the exact score by the tolerance; twice
    # it leaves room for the float64 score's own, far smaller, rounding.
    margin = 2.0 * score_tolerance(queries, gallery)
    ranks = np.ones(len(queries), dtype=np.int64)
    rows_per_chunk = max(1, _BUDGET_BYTES // (4 * max(1, len(gallery))))
    gallery_t = np.ascontiguousarray(gallery.T)
    for start in range(0, len(queries), rows_per_chunk):
        stop = min(start + rows_per_chunk, len(queries))
        approximate = queries[start:stop] @ gallery_t
        threshold = best_score[start:stop, None]
        ranks[start:stop] += (approximate > threshold + margin).sum(axis=1)
        band_rows, band_columns = np.nonzero(np.abs(approximate - threshold) <= margin)
        query_rows = band_rows + start
        # In bounded steps: with many tied items the band holds most of the chunk.
        exact = exact_pair_scores(queries, gallery, query_rows, band_columns)
        ahead = (exact > best_score[query_rows]) | (
            (exact == best_score[query_rows]) & (gallery_ids[band_columns] < best_id[query_rows])
        )
        ranks[start:stop] += np.bincount(band_rows[ahead], minlength=stop - start)
    return ranks
