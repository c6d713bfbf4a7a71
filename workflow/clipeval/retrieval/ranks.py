"""The rank of each query's first correct item in the full ranking.

Ranks follow the ranking rule (ranking_rule.py) over the whole gallery, not the top-k
lists, so they are right beyond K: the rank of an item is
1 + #(score > s) + #(score == s and id < own id), and a query's rank is that
of its best-ranked positive. float32 matrix products sort the gallery into
items clearly ahead, clearly behind, and a narrow band around the positive's
score; the band is scored exactly (exact_pair_scores), like the top-k lists.
"""

import numpy as np

from clipeval.ranking_rule import exact_pair_scores, score_tolerance

# The float32 scores of one tile of queries × gallery items. Tiles are at most
# TILE_COLUMNS wide so that a large gallery still gets hundreds of query rows
# a tile: BLAS runs a product of a few dozen rows at under half its speed.
BUDGET_BYTES = 64 << 20
TILE_COLUMNS = 32768


def best_positives(queries, gallery, gallery_ids, owner, positive_rows):
    """Per query row: (score, gallery row) of its best positive under the ranking rule."""
    scores = exact_pair_scores(queries, gallery, owner, positive_rows)
    order = np.lexsort((gallery_ids[positive_rows], -scores, owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = owner[order][1:] != owner[order][:-1]
    chosen = order[first]
    best_score = np.full(len(queries), -np.inf)
    best_row = np.zeros(len(queries), dtype=np.int64)
    best_score[owner[chosen]] = scores[chosen]
    best_row[owner[chosen]] = positive_rows[chosen]
    return best_score, best_row


def _float32_bound(values: np.ndarray, toward: float) -> np.ndarray:
    """float64 bounds as float32, rounded outward so that comparing in float32 never narrows the band."""
    return np.nextafter(values.astype(np.float32), np.float32(toward))


def _count_true(flags: np.ndarray) -> np.ndarray:
    # Summing the bytes is several times faster than numpy's sum or count_nonzero of booleans along an axis.
    return flags.view(np.uint8).sum(axis=1, dtype=np.int64)


class _Best:
    """Each query's best positive: exact score, gallery row and id, and the float32 band around the score."""

    def __init__(self, score, row, gallery_ids, margin):
        self.score, self.row, self.id = score, row, gallery_ids[row]
        self.above = _float32_bound(score + margin, np.inf)
        self.below = _float32_bound(score - margin, -np.inf)


def _ahead_in_tile(queries, gallery, gallery_ids, best: _Best, rows: slice, columns: slice, scores, flags):
    """Per query in `rows`: how many gallery items in `columns` the ranking rule puts before its best positive.

    `scores` and `flags` are scratch buffers of the tile's shape.
    """
    np.matmul(queries[rows], gallery[columns].T, out=scores)
    above, below = best.above[rows, None], best.below[rows, None]
    # Two float32 passes count the items clearly ahead and those not clearly behind; the difference is the
    # band, which is scored exactly.
    np.greater(scores, above, out=flags)
    clearly_ahead = _count_true(flags)
    np.greater_equal(scores, below, out=flags)
    band_sizes = _count_true(flags) - clearly_ahead
    # A band of one that is the best positive itself puts nothing ahead of it: most queries, most tiles.
    local = np.arange(len(scores))
    own_column = best.row[rows] - columns.start
    own_here = (own_column >= 0) & (own_column < scores.shape[1])
    own = scores[local, np.where(own_here, own_column, 0)]
    alone = own_here & (band_sizes == 1) & (own >= below[:, 0]) & (own <= above[:, 0])
    band_local = local[(band_sizes > 0) & ~alone]
    if not len(band_local):
        return clearly_ahead
    band_rows, band_columns = np.nonzero(flags[band_local] & (scores[band_local] <= above[band_local]))
    band_rows = band_local[band_rows]
    query_rows, gallery_rows = band_rows + rows.start, band_columns + columns.start
    # In bounded steps: with many tied items the band holds most of the tile.
    exact = exact_pair_scores(queries, gallery, query_rows, gallery_rows)
    ahead = (exact > best.score[query_rows]) | (
        (exact == best.score[query_rows]) & (gallery_ids[gallery_rows] < best.id[query_rows])
    )
    return clearly_ahead + np.bincount(band_rows[ahead], minlength=len(scores))


def first_positive_ranks(queries, gallery, gallery_ids, owner, positive_ids) -> np.ndarray:
    """1-based rank of each query's best positive, in memory bounded by one tile of float32 scores.

    queries[r] owns the positives positive_ids[owner == r]; every query must
    own at least one, and every positive must be in gallery_ids.
    """
    order = np.argsort(gallery_ids, kind="stable")
    positive_rows = order[np.searchsorted(gallery_ids[order], positive_ids)]
    # The float32 product may sit off the exact score by the tolerance; twice
    # it leaves room for the float64 score's own, far smaller, rounding.
    margin = 2.0 * score_tolerance(queries, gallery)
    best = _Best(*best_positives(queries, gallery, gallery_ids, owner, positive_rows), gallery_ids, margin)
    ranks = np.ones(len(queries), dtype=np.int64)
    tile_columns = max(1, min(len(gallery), TILE_COLUMNS))
    tile_rows = max(1, min(len(queries), BUDGET_BYTES // (4 * tile_columns)))
    score_buffer = np.empty(tile_rows * tile_columns, dtype=np.float32)
    flag_buffer = np.empty(tile_rows * tile_columns, dtype=bool)
    for row_start in range(0, len(queries), tile_rows):
        rows = slice(row_start, min(row_start + tile_rows, len(queries)))
        for column_start in range(0, len(gallery), tile_columns):
            columns = slice(column_start, min(column_start + tile_columns, len(gallery)))
            shape = (rows.stop - rows.start, columns.stop - columns.start)
            size = shape[0] * shape[1]
            ranks[rows] += _ahead_in_tile(
                queries,
                gallery,
                gallery_ids,
                best,
                rows,
                columns,
                score_buffer[:size].reshape(shape),
                flag_buffer[:size].reshape(shape),
            )
    return ranks


def every_positive_rank(queries, gallery, gallery_ids, owner, positive_ids) -> np.ndarray:
    """1-based rank of each positive pair (positive_ids[i] among query owner[i]'s gallery ranking).

    Each pair is ranked as a query of its own that owns that one positive, so a pair's rank counts the
    query's other positives ranked before it, as a ranked list would.
    """
    if len(owner) == len(queries):  # one positive each: a query's rank is its pair's
        return first_positive_ranks(queries, gallery, gallery_ids, owner, positive_ids)[owner]
    pairs = np.arange(len(owner))
    return first_positive_ranks(queries[owner], gallery, gallery_ids, pairs, positive_ids)
