"""Exact inner-product top-k under the ranking rule (ranking_rule.py).

Two steps. A float32 search keeps, for each query, every gallery item whose
float32 score is within `margin` of the query's k-th best float32 score.
A float32 score is within the tolerance of the exact one (score_tolerance),
so with a margin of twice the tolerance the exact top-k, ties included, is
among those candidates, whatever order the search summed in. The candidates
alone are then scored exactly and ordered by the ranking rule: the result
does not depend on which search found them. Both searches hand them over
grouped by ascending query row. The numpy search splits each block's queries
over the job's threads, and each thread multiplies its own chunks with BLAS
held to one thread, passes over their scores and ranks each chunk's
candidates while the other threads multiply; FAISS's candidates are ranked
in the same number of parts at once.

Two searches find candidates: numpy's matrix product (its BLAS) and FAISS
(a GPU index when faiss sees a GPU). On the CPU, which is faster depends on
the machine (FAISS bundles its own BLAS, which has mis-detected CPUs), so
`auto` runs each on one block of queries of the size it works best at and
keeps the one that took less time per query. Each block's candidates are
used, so the timing costs no repeated work. (FAISS's CPU search leaves BLAS
for a loop several times slower per query when a call has fewer than about
128,000 / dimension queries, which is why it is not timed on numpy's block,
a few hundred rows against a large gallery.)
"""

import time

import numpy as np
from threadpoolctl import ThreadpoolController

from clipeval.devices import gpu_number
from clipeval.errors import ClipevalError
from clipeval.ranking_rule import (
    exact_pair_scores,
    exact_table_scores,
    order_pairs_by_ranking_rule,
    score_tolerance,
)
from clipeval.retrieval.directions import Direction
from clipeval.threads import compute_threads, in_threads, row_parts

SEARCHES = ("auto", "numpy", "faiss")
# Each thread of the numpy search multiplies a chunk of queries at a time, with BLAS held to one thread, and
# passes over the chunk's scores while the other threads multiply: measured faster than BLAS's own threads
# followed by a threaded pass over a whole block (docs/BENCHMARKS.md).
_CHUNK_SCORE_BYTES = 32 << 20  # float32 scores of one thread's chunk
# A chunk has at least this many queries: a one-thread product repacks the gallery for every call, a cost
# that fewer queries do not amortize. A gallery too large for that is multiplied in tiles of columns.
_MIN_CHUNK_ROWS = 512
_GPU_MAX_K = 2048  # FAISS GPU flat indexes answer at most this many neighbours
# The numpy search splits each row of scores into groups and only looks inside
# the groups whose maximum can reach the k-th best: at least this many groups.
MIN_GROUPS = 256
# Finding each row's k-th best candidate and ordering each query's candidates run on a table with a row per
# query, padded to the query with the most candidates, where it holds at most this many times the candidates:
# cheaper than sorting all of them together, which the rows that ties make wide fall back to.
_MAX_TABLE_PADDING = 2
# FAISS fetches this many beyond k at first, enough for the items within the margin of the k-th best in
# nearly every row; a row where they do not fit is fetched again, four times as deep. FAISS's time grows
# with the depth it fetches.
_EXTRA_FETCHED = 6
# auto times FAISS on at least this many queries (and at least as many as it timed numpy on): enough that
# FAISS multiplies through BLAS (docs/BENCHMARKS.md: its calls by size), few enough that most of a
# COCO-sized job is left to the search it keeps.
_TIMED_QUERIES = 1024
# The first quarter of FAISS's timing block runs untimed: its first call in a process also starts its thread
# pools, a one-time cost that made it look slower than it runs (docs/BENCHMARKS.md). The numpy search starts
# nothing that outlives a call, and splitting its block costs it a repacking of the gallery per thread.
_UNTIMED_SHARE = 4


class MatmulSearch:
    """float32 scores as numpy matrix products, a chunk of queries against a tile of the gallery at a time."""

    name = "numpy"
    warms_up = False  # nothing to leave untimed in auto's timing block

    def __init__(self, gallery: np.ndarray):
        self.gallery = gallery
        n = max(1, len(gallery))
        tiles = -(-_MIN_CHUNK_ROWS * 4 * n // _CHUNK_SCORE_BYTES)
        self.tile_bounds = np.linspace(0, len(gallery), tiles + 1).astype(np.int64)
        widest = max(1, int(np.diff(self.tile_bounds).max()))
        self.rows_per_chunk = max(1, _CHUNK_SCORE_BYTES // (4 * widest))
        self.rows_per_block = self.rows_per_chunk * compute_threads()
        self._blas = ThreadpoolController()

    def answer(self, queries: np.ndarray, k: int, margin: float, rank):
        """Hand rank(first, end, rows, columns) the candidates of each chunk of queries[first:end]. Each
        thread ranks its chunk's candidates as soon as it has them, while the other threads multiply."""
        n = len(self.gallery)
        if k >= n:
            rank_in_parts(len(queries), *_every_pair(len(queries), n), rank)
            return

        def answer_part(start, stop):
            for first in range(start, stop, self.rows_per_chunk):
                end = min(stop, first + self.rows_per_chunk)
                rank(first, end, *self._chunk_candidates(queries[first:end], k, margin))

        with self._blas.limit(limits=1, user_api="blas"):
            in_threads(answer_part, row_parts(len(queries)))

    def candidates(self, queries: np.ndarray, k: int, margin: float):
        """Every candidate of `queries` at once, as (rows, columns) grouped by ascending row."""
        found = {}

        def keep(first, end, rows, columns):
            found[first] = rows + first, columns

        self.answer(queries, k, margin, keep)
        parts = [found[first] for first in sorted(found)]
        return np.concatenate([rows for rows, _ in parts]), np.concatenate([columns for _, columns in parts])

    def _chunk_candidates(self, chunk, k, margin):
        """A chunk's candidates. Each tile keeps what is within `margin` of its own k-th best, which is no
        better than the row's: so the tiles together keep every candidate."""
        in_tiles = [
            within_margin_of_kth(chunk @ self.gallery[first:end].T, k, margin, first)
            for first, end in zip(self.tile_bounds[:-1].tolist(), self.tile_bounds[1:].tolist())
        ]
        return near_kth(*(np.concatenate(found) for found in zip(*in_tiles)), k, margin, len(chunk))


def within_margin_of_kth(scores: np.ndarray, k: int, margin: float, first_column: int):
    """(rows, columns + first_column, scores) of the scores within `margin` of their row's k-th best, or of
    every score where a row has k or fewer."""
    rows_count, n = scores.shape
    if k >= n:
        rows, columns = _every_pair(rows_count, n)
        return rows, columns + first_column, scores.ravel()
    # Columns fall into `groups` interleaved groups (column c into group c % groups) and a ragged tail.
    # Only the groups whose maximum reaches near the k-th best hold candidates; an interleaved
    # group's maximum is an elementwise maximum over contiguous rows, the fastest reduction numpy has.
    groups = min(n, max(MIN_GROUPS, 4 * k))
    depth = n // groups
    whole = depth * groups
    grouped = scores[:, :whole].reshape(rows_count, depth, groups)
    maxima = np.empty((rows_count, groups + (whole < n)), dtype=np.float32)
    np.max(grouped, axis=1, out=maxima[:, :groups])
    if whole < n:
        maxima[:, groups] = scores[:, whole:].max(axis=1)
    # k groups reach the k-th best group maximum, so the k-th best score is no lower.
    floor = np.partition(maxima, -k, axis=1)[:, -k] - margin
    hit_rows, hit_groups = np.nonzero(maxima >= floor[:, None])
    inside = hit_groups < groups
    rows, hit, place = _at_least(grouped[hit_rows[inside], :, hit_groups[inside]], hit_rows[inside], floor)
    tail_rows = hit_rows[~inside]
    rows_t, _, columns_t = _at_least(scores[tail_rows, whole:], tail_rows, floor)
    rows = np.concatenate([rows, rows_t])
    columns = np.concatenate([place * groups + hit_groups[inside][hit], whole + columns_t])
    return rows, columns + first_column, scores[rows, columns]


def _every_pair(rows_count: int, n: int):
    """(rows, columns) of every score of a (rows_count, n) matrix, row by row."""
    return np.repeat(np.arange(rows_count), n), np.tile(np.arange(n), rows_count)


def _at_least(values, value_rows, floor):
    """(query row, row of `values`, column of `values`) of each value not below its query's floor."""
    which, columns = np.nonzero(values >= floor[value_rows][:, None])
    return value_rows[which], which, columns


def near_kth(rows, columns, approximate, k, margin, rows_count):
    """Keep the candidates within `margin` of their row's k-th best, grouped by ascending row; every one of
    the rows_count rows has at least k."""
    order = np.argsort(rows, kind="stable")
    rows, columns, approximate = rows[order], columns[order], approximate[order]
    keep = approximate >= _kth_best_by_row(rows, approximate, k, rows_count)[rows] - margin
    return rows[keep], columns[keep]


def _kth_best_by_row(rows, values, k, rows_count):
    """The k-th largest of each row's values, for values grouped by ascending row."""
    first, positions, widest = _row_layout(rows, rows_count)
    if not _fits_a_table(rows_count, widest, len(rows)):
        return values[np.lexsort((-values, rows))][first + k - 1]
    padded = np.full((rows_count, widest), -np.inf, dtype=values.dtype)
    padded[rows, positions] = values
    return np.partition(padded, widest - k, axis=1)[:, widest - k]


def _row_layout(rows, rows_count):
    """(each row's first pair, each pair's place in its row, the most pairs a row has), for pairs grouped by
    ascending row."""
    counts = np.bincount(rows, minlength=rows_count)
    first = np.cumsum(counts) - counts
    return first, np.arange(len(rows)) - first[rows], int(counts.max(initial=0))


def _fits_a_table(rows_count, widest, pairs):
    return rows_count * widest <= _MAX_TABLE_PADDING * pairs


class FaissSearch:
    """float32 scores from FAISS's exhaustive search: a flat index on a GPU when asked (`cuda`, `cuda:N`) or,
    under `auto`, when faiss sees one; on the CPU otherwise, where it searches the gallery array itself
    (faiss.knn, the search a flat index runs, without the index's copy of the gallery). The device names
    are torch's, as for extraction."""

    name = "faiss"
    warms_up = True  # its first call starts its thread pools: auto leaves a share of its timing block untimed
    # FAISS bounds its own memory; it is slow when handed few queries at a time against a large gallery.
    rows_per_block = 16384

    def __init__(self, gallery: np.ndarray, device: str = "auto"):
        try:
            import faiss
        except ImportError:
            raise ClipevalError(
                "knn needs FAISS, and no FAISS build is installed: pip install 'clipeval[cpu]',"
                " or 'clipeval[gpu]' on a CUDA host"
            ) from None
        self._faiss = faiss
        self.gallery = np.ascontiguousarray(gallery, dtype=np.float32)
        self.gpu_index = None
        gpus = faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0
        number = gpu_number(device, "knn device")
        if number is not None and number >= gpus:
            seen = f"faiss sees {gpus} GPU(s)" if gpus else "faiss sees no GPU (is faiss-gpu installed?)"
            raise ClipevalError(f"knn device {device!r} requested but {seen}")
        if number is None and device == "auto" and gpus:
            number = 0
        if number is not None:
            self._resources = faiss.StandardGpuResources()
            cpu_index = faiss.IndexFlatIP(gallery.shape[1])
            cpu_index.add(self.gallery)
            self.gpu_index = faiss.index_cpu_to_gpu(self._resources, number, cpu_index)

    @property
    def uses_gpu(self) -> bool:
        return self.gpu_index is not None

    def search(self, queries: np.ndarray, k: int):
        """FAISS's own (float32 scores, gallery rows), best first; its tie order is its own."""
        if self.gpu_index is not None and k <= _GPU_MAX_K:
            return self.gpu_index.search(np.ascontiguousarray(queries), k)
        return self._faiss.knn(queries, self.gallery, k, metric=self._faiss.METRIC_INNER_PRODUCT)

    def candidates(self, queries: np.ndarray, k: int, margin: float):
        n = len(self.gallery)
        pending = np.arange(len(queries))
        fetch = min(n, k + _EXTRA_FETCHED)
        found_rows, found_columns = [], []
        while len(pending):
            approximate, positions = self.search(queries[pending], fetch)
            floor = approximate[:, k - 1] - margin
            # A row is complete once its last fetched score is below the floor: nothing unfetched reaches it.
            complete = np.full(len(pending), fetch == n) | (approximate[:, -1] < floor)
            which, place = np.nonzero((approximate >= floor[:, None]) & complete[:, None])
            found_rows.append(pending[which])
            found_columns.append(positions[which, place])
            pending = pending[~complete]
            fetch = min(n, fetch * 4)
        rows, columns = np.concatenate(found_rows), np.concatenate(found_columns)
        order = np.argsort(rows, kind="stable")
        return rows[order], columns[order]

    def answer(self, queries: np.ndarray, k: int, margin: float, rank):
        """Find the candidates of all `queries` (FAISS's search runs its own threads), then rank them split
        over the job's threads."""
        rank_in_parts(len(queries), *self.candidates(queries, k, margin), rank)


class Searcher:
    """The search knn runs: `numpy`, `faiss`, or `auto`: FAISS on a GPU it sees or is given; on the CPU,
    whichever of the two takes less time per query, numpy timed on its first block and FAISS on the next
    queries (`_TIMED_QUERIES` or numpy's block, whichever is more)."""

    def __init__(self, gallery: np.ndarray, device: str = "auto", search: str = "auto"):
        if search not in SEARCHES:
            raise ClipevalError(f"knn search {search!r}: expected {', '.join(SEARCHES)}")
        if search == "numpy":
            if gpu_number(device, "knn device") is not None:
                raise ClipevalError(f"knn search 'numpy' runs on the CPU, but knn device {device!r} names a GPU")
            self.searches = [MatmulSearch(gallery)]
        else:
            faiss = FaissSearch(gallery, device)
            # numpy first: its blocks are bounded by memory, so it gives up fewer queries to the timing
            self.searches = [faiss] if search == "faiss" or faiss.uses_gpu else [MatmulSearch(gallery), faiss]
        self.untimed = list(self.searches) if len(self.searches) > 1 else []
        self.chosen = None if self.untimed else self.searches[0]
        self.seconds_per_query = {}

    @property
    def rows_per_block(self) -> int:
        """Queries in the next call: the block size of the search that answers it, or, for a search being
        timed after the first, a block no larger than it needs to be timed fairly."""
        if not self.untimed:
            return self.chosen.rows_per_block
        timed_next = self.untimed[0]
        if timed_next is self.searches[0]:
            return timed_next.rows_per_block
        return min(timed_next.rows_per_block, max(_TIMED_QUERIES, self.searches[0].rows_per_block))

    @property
    def uses_gpu(self) -> bool:
        return getattr(self.chosen, "uses_gpu", False)

    def answer(self, queries, k, margin, rank):
        if not self.untimed:
            self.chosen.answer(queries, k, margin, rank)
            return
        search = self.untimed.pop(0)
        warm_up = len(queries) // _UNTIMED_SHARE if search.warms_up else 0
        if warm_up:
            search.answer(queries[:warm_up], k, margin, rank)
        start = time.perf_counter()
        search.answer(queries[warm_up:], k, margin, _shifted(rank, warm_up))
        self.seconds_per_query[search.name] = (time.perf_counter() - start) / (len(queries) - warm_up)
        timed = [search for search in self.searches if search.name in self.seconds_per_query]
        self.chosen = min(timed, key=lambda search: self.seconds_per_query[search.name])


def top_k(queries: np.ndarray, gallery: np.ndarray, gallery_ids: np.ndarray, k: int, searcher) -> tuple:
    """Return (ids, scores), each (n_queries, min(k, gallery size)), best first."""
    if k < 1:
        raise ClipevalError(f"top_k must be at least 1, got {k}")
    kept = min(k, len(gallery))
    # Twice the tolerance: one for the k-th best's own float32 error, one for the candidate's.
    margin = 2.0 * score_tolerance(queries, gallery)
    result_ids = np.empty((len(queries), kept), dtype=np.int64)
    result_scores = np.empty((len(queries), kept), dtype=np.float64)

    def rank(first, end, rows, columns):
        result_ids[first:end], result_scores[first:end] = best_by_ranking_rule(
            queries[first:end], gallery, gallery_ids, rows, columns, kept
        )

    start = 0
    while start < len(queries):
        stop = min(start + searcher.rows_per_block, len(queries))
        searcher.answer(queries[start:stop], kept, margin, _shifted(rank, start))
        start = stop
    return result_ids, result_scores


def _shifted(rank, offset):
    """rank, for queries that start `offset` rows further on."""
    return lambda first, end, rows, columns: rank(first + offset, end + offset, rows, columns)


def rank_in_parts(count, rows, columns, rank):
    """rank(first, end, rows, columns) for count queries' candidates (grouped by ascending row), split into
    compute_threads() parts ranked at once."""

    def rank_part(first, end):
        low, high = np.searchsorted(rows, [first, end])
        rank(first, end, rows[low:high] - first, columns[low:high])

    in_threads(rank_part, row_parts(count))


def best_by_ranking_rule(queries, gallery, gallery_ids, rows, columns, kept):
    """(ids, exact scores) of each query's `kept` best candidates under the ranking rule. The candidate
    (query row, gallery row) pairs come grouped by ascending query row, at least `kept` for each query."""
    first, positions, widest = _row_layout(rows, len(queries))
    leading = first[:, None] + np.arange(kept)
    if not _fits_a_table(len(queries), widest, len(rows)):
        exact = exact_pair_scores(queries, gallery, rows, columns)
        chosen = order_pairs_by_ranking_rule(rows, exact, gallery_ids[columns])[leading]
        return gallery_ids[columns[chosen]], exact[chosen]
    # Each query's candidates in a row of a table, sorted row by row: each query's first `kept` are scored
    # a query at a time, the rest pair by pair; the padding scores -inf, below every exact score.
    extra = positions >= kept
    scores = np.full((len(queries), widest), -np.inf)
    scores[:, :kept] = exact_table_scores(queries, gallery, columns[leading])
    scores[rows[extra], positions[extra]] = exact_pair_scores(queries, gallery, rows[extra], columns[extra])
    ids = np.zeros((len(queries), widest), dtype=gallery_ids.dtype)
    ids[rows, positions] = gallery_ids[columns]
    chosen = np.lexsort((ids, -scores), axis=1)[:, :kept]
    return np.take_along_axis(ids, chosen, axis=1), np.take_along_axis(scores, chosen, axis=1)


def prediction_rows(query_ids, ids, scores, direction: Direction):
    """Prediction file rows: the query's id, its ranked item ids and their exact scores."""
    for query_id, row_ids, row_scores in zip(query_ids.tolist(), ids.tolist(), scores.tolist()):
        yield {direction.query_key: query_id, direction.predicted_key: row_ids, "scores": row_scores}
