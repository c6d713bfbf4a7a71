"""The rank of each query's first correct item in the full ranking.

Ranks follow the ranking rule (ranking_rule.py) over the whole gallery, not the top-k
lists, so they are right beyond K: the rank of an item is
1 + #(score > s) + #(score == s and id < own id), and a query's rank is that
of its best-ranked positive. float32 matrix products sort the gallery into
items clearly ahead, clearly behind, and a narrow band around the positive's
score; the band is scored exactly (exact_pair_scores), like the top-k lists.
Where a model's scores all sit close together (random weights, an early
epoch) a band holds much of the gallery: those queries are scored again by a
float64 matrix product, whose band is a billion times narrower.
"""

import numpy as np

from clipeval.ranking_rule import exact_pair_scores, score_tolerance
from clipeval.threads import in_threads, row_parts

# The float32 scores of one tile of queries × gallery items. Tiles are at most
# TILE_COLUMNS wide so that a large gallery still gets hundreds of query rows
# a tile: BLAS runs a product of a few dozen rows at under half its speed.
BUDGET_BYTES = 64 << 20
TILE_COLUMNS = 32768
# A query whose float32 band holds more items than this is scored again in float64 (BLAS, in the job's threads)
# rather than item by item: pair by pair, the exact scores cost about a hundred times a product's share.
WIDE_BAND = 64


def best_positives(queries, gallery, gallery_ids, query_rows, owner, positive_rows):
    """Per query (queries[query_rows[r]]): (score, gallery row) of its best positive under the ranking rule."""
    scores = exact_pair_scores(queries, gallery, query_rows[owner], positive_rows)
    order = np.lexsort((gallery_ids[positive_rows], -scores, owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = owner[order][1:] != owner[order][:-1]
    chosen = order[first]
    best_score = np.full(len(query_rows), -np.inf)
    best_row = np.zeros(len(query_rows), dtype=np.int64)
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
    """Each query's best positive: exact score, gallery row and id, the float32 band around the score and the
    margin of a float64 product; and the query's row of the query features."""

    def __init__(self, score, row, gallery_ids, margins, query_row):
        self.score, self.row, self.id, self.query_row = score, row, gallery_ids[row], query_row
        margin, self.margin64 = margins
        self.above = _float32_bound(score + margin, np.inf)
        self.below = _float32_bound(score - margin, -np.inf)


def _ahead_in_tile(queries, gallery, gallery_ids, best: _Best, pair_rows, columns: slice, scores, flags):
    """Per ranked item of `pair_rows` (one per row of `scores`): how many gallery items in `columns` the ranking
    rule puts before its best positive, and the rows whose band is wide: their counts are left for
    _ahead_in_float64.

    `scores` holds the float32 scores of the items' queries against the columns; `flags` is a scratch buffer of
    its shape.
    """
    bounds = (best.above[pair_rows, None], best.below[pair_rows, None])
    return _ahead_of_best(queries, gallery, gallery_ids, best, pair_rows, columns, scores, bounds, flags, WIDE_BAND)


def _ahead_of_best(queries, gallery, gallery_ids, best: _Best, pair_rows, columns: slice, scores, bounds, flags, wide):
    """(Per query of pair_rows: how many gallery items in `columns` the ranking rule puts before its best
    positive; the rows of `scores` whose band holds more than `wide` items, left uncounted.) `scores` are the
    queries' approximate scores against the columns, off the exact ones by less than the margin of `bounds`
    (above, below: each query's best positive's exact score plus and minus it); `flags` a buffer of their shape.
    """
    above, below = bounds
    # Two passes count the items clearly ahead and those not clearly behind; the difference is the band, which
    # is scored exactly.
    np.greater(scores, above, out=flags)
    clearly_ahead = _count_true(flags)
    np.greater_equal(scores, below, out=flags)
    band_sizes = _count_true(flags) - clearly_ahead
    # A band of one that is the best positive itself puts nothing ahead of it: most queries, most tiles.
    local = np.arange(len(scores))
    own_column = best.row[pair_rows] - columns.start
    own_here = (own_column >= 0) & (own_column < scores.shape[1])
    own = scores[local, np.where(own_here, own_column, 0)]
    alone = own_here & (band_sizes == 1) & (own >= below[:, 0]) & (own <= above[:, 0])
    banded = (band_sizes > 0) & ~alone
    too_wide = banded & (band_sizes > wide)
    band_local = local[banded & ~too_wide]
    if len(band_local):
        band_rows, band_columns = np.nonzero(flags[band_local] & (scores[band_local] <= above[band_local]))
        band_rows = band_local[band_rows]
        ahead = _exactly_ahead(queries, gallery, gallery_ids, best, pair_rows[band_rows], band_columns + columns.start)
        clearly_ahead += np.bincount(band_rows[ahead], minlength=len(scores))
    return clearly_ahead, local[too_wide]


def _exactly_ahead(queries, gallery, gallery_ids, best: _Best, pair_rows, gallery_rows) -> np.ndarray:
    """Whether the ranking rule puts gallery_rows[i] before the best positive of query pair_rows[i], from the
    exact scores."""
    # In bounded steps: with many tied items the band holds most of the tile.
    exact = exact_pair_scores(queries, gallery, best.query_row[pair_rows], gallery_rows)
    return (exact > best.score[pair_rows]) | (
        (exact == best.score[pair_rows]) & (gallery_ids[gallery_rows] < best.id[pair_rows])
    )


def _ahead_in_float64(queries, gallery, gallery_ids, best: _Best, pair_rows, columns: slice) -> np.ndarray:
    """Per query of pair_rows: how many gallery items in `columns` the ranking rule puts before its best
    positive, from float64 products (summed in any order, within best.margin64 of the exact score) and the exact
    scores of the items inside that margin: ties and near-ties."""
    gallery64 = gallery[columns].astype(np.float64)
    counts = np.empty(len(pair_rows), dtype=np.int64)
    step = max(1, BUDGET_BYTES // (8 * len(gallery64)))
    flag_buffer = np.empty(min(step, len(pair_rows)) * len(gallery64), dtype=bool)
    for start in range(0, len(pair_rows), step):
        part = pair_rows[start : start + step]
        distinct, inverse = np.unique(best.query_row[part], return_inverse=True)
        products = queries[distinct].astype(np.float64) @ gallery64.T
        if not np.array_equal(distinct, best.query_row[part]):  # repeated or out of order: one row per pair
            products = products[inverse]
        bounds = ((best.score[part] + best.margin64)[:, None], (best.score[part] - best.margin64)[:, None])
        flags = flag_buffer[: products.size].reshape(products.shape)
        part_counts, _ = _ahead_of_best(
            queries, gallery, gallery_ids, best, part, columns, products, bounds, flags, len(gallery64)
        )
        counts[start : start + len(part)] = part_counts
    return counts


def _items_by_query(query_rows) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct query rows, sorted; a table whose row s holds, for each distinct query, its s-th ranked item,
    or -1 where it has fewer). A query with five positive captions is one row of the score tiles, compared with
    each of its five items' bounds in turn: the tile is not copied out once per item."""
    distinct, inverse = np.unique(query_rows, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    first = np.searchsorted(inverse[order], np.arange(len(distinct)))
    slot = np.empty(len(query_rows), dtype=np.int64)
    slot[order] = np.arange(len(order)) - first[inverse[order]]
    table = np.full((int(slot.max()) + 1 if len(slot) else 0, len(distinct)), -1, dtype=np.int64)
    table[slot, inverse] = np.arange(len(query_rows))
    return distinct, table


def _count_ahead_in_tile(queries, gallery, gallery_ids, best: _Best, slot_items, columns: slice, tile, ranks):
    """Adds to `ranks` the gallery items in `columns` that the ranking rule puts before each ranked item of
    slot_items (one per row of the tile's scores, -1 for a row without one) and returns the items whose band is
    wide, left uncounted for _ahead_in_float64. `tile`: the scores, a flag buffer and a buffer for the rows of
    the items present where some are not."""
    scores, flag_buffer, gathered_buffer = tile
    present = slot_items >= 0
    pair_rows = slot_items[present]
    if not len(pair_rows):  # none of this tile's queries has so many items
        return pair_rows
    if len(pair_rows) < len(scores):
        gathered = gathered_buffer[: len(pair_rows) * scores.shape[1]].reshape(len(pair_rows), scores.shape[1])
        scores = np.compress(present, scores, axis=0, out=gathered)
    flags = flag_buffer[: scores.size].reshape(scores.shape)

    def ahead(start, stop):
        return _ahead_in_tile(
            queries, gallery, gallery_ids, best, pair_rows[start:stop], columns, scores[start:stop], flags[start:stop]
        )

    bounds = row_parts(len(pair_rows))
    parts = in_threads(ahead, bounds)
    counts = np.concatenate([part_counts for part_counts, _ in parts])
    wide = np.concatenate([part_wide + start for (_, part_wide), (start, _) in zip(parts, bounds)])
    counts[wide] = 0
    ranks[pair_rows] += counts
    return pair_rows[wide]


def first_positive_ranks(queries, gallery, gallery_ids, owner, positive_ids, query_rows=None) -> np.ndarray:
    """1-based rank of each query's best positive, in memory bounded by one tile of float32 scores.

    Query r is queries[query_rows[r]] (queries[r] without query_rows) and owns the positives
    positive_ids[owner == r]; every query must own at least one, and every positive must be in gallery_ids.
    The matrix products run in BLAS's threads, the float32 bands in the job's (threads.py): the ranks are the
    ranking rule's whatever the threads.
    """
    query_rows = np.arange(len(queries)) if query_rows is None else np.asarray(query_rows)
    order = np.argsort(gallery_ids, kind="stable")
    positive_rows = order[np.searchsorted(gallery_ids[order], positive_ids)]
    # A float32 (float64) product may sit off the exact score by its tolerance; twice it leaves room for the
    # exact score's own rounding.
    margins = tuple(2.0 * score_tolerance(queries, gallery, precision) for precision in (np.float32, np.float64))
    best = _Best(
        *best_positives(queries, gallery, gallery_ids, query_rows, owner, positive_rows),
        gallery_ids,
        margins,
        query_rows,
    )
    ranks = np.ones(len(query_rows), dtype=np.int64)
    distinct, items = _items_by_query(query_rows)
    tile_columns = max(1, min(len(gallery), TILE_COLUMNS))
    tile_rows = max(1, min(len(distinct), BUDGET_BYTES // (4 * tile_columns)))
    score_buffer = np.empty(tile_rows * tile_columns, dtype=np.float32)
    flag_buffer = np.empty(tile_rows * tile_columns, dtype=bool)
    # Where a query has fewer items than another, its rows are gathered out of the tile for the items it lacks.
    gathered_buffer = np.empty(tile_rows * tile_columns, dtype=np.float32) if (items < 0).any() else None
    for row_start in range(0, len(distinct), tile_rows):
        rows = slice(row_start, min(row_start + tile_rows, len(distinct)))
        for column_start in range(0, len(gallery), tile_columns):
            columns = slice(column_start, min(column_start + tile_columns, len(gallery)))
            shape = (rows.stop - rows.start, columns.stop - columns.start)
            scores = score_buffer[: shape[0] * shape[1]].reshape(shape)
            np.matmul(queries[distinct[rows]], gallery[columns].T, out=scores)
            tile = (scores, flag_buffer, gathered_buffer)
            wide_items = [
                _count_ahead_in_tile(queries, gallery, gallery_ids, best, slot_items, columns, tile, ranks)
                for slot_items in items[:, rows]
            ]
            wide_items = np.concatenate(wide_items)
            wide_items = wide_items[np.argsort(best.query_row[wide_items], kind="stable")]
            if len(wide_items):  # after the threads, in BLAS's; each query's float64 product once for all its items
                ranks[wide_items] += _ahead_in_float64(queries, gallery, gallery_ids, best, wide_items, columns)
    return ranks


def every_positive_rank(queries, gallery, gallery_ids, owner, positive_ids) -> np.ndarray:
    """1-based rank of each positive pair (positive_ids[i] among query owner[i]'s gallery ranking).

    Each pair is ranked as a query of its own that owns that one positive, so a pair's rank counts the
    query's other positives ranked before it, as a ranked list would.
    """
    if len(owner) == len(queries):  # one positive each: a query's rank is its pair's
        return first_positive_ranks(queries, gallery, gallery_ids, owner, positive_ids)[owner]
    pairs = np.arange(len(owner))
    return first_positive_ranks(queries, gallery, gallery_ids, pairs, positive_ids, query_rows=owner)
