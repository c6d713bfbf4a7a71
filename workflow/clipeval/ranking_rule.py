"""The ranking rule every stage orders by (docs/ARCHITECTURE.md, "The ranking rule").

Items are ordered by descending score, then ascending id. The score of a pair
is the float64 sum of the products of its float32 features, computed here
and nowhere else, so a pair gets the same score wherever it is ranked: top-k
lists, full ranks and classification.
"""

import numpy as np


def exact_scores(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """float64 dot products along the last axis (broadcast).

    The products of float32 values are exact in float64 and the sum runs over
    the same values in the same order for identical vectors, so duplicate
    items score identically: their tie is kept, not broken by rounding noise.
    """
    return (left.astype(np.float64) * right.astype(np.float64)).sum(axis=-1)


def _largest_squared_norm(matrix: np.ndarray) -> float:
    # einsum sums row by row; np.linalg.norm would first square a copy of the whole matrix.
    return float(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64).max(initial=0.0))


def score_tolerance(queries: np.ndarray, gallery: np.ndarray, precision=np.float32) -> float:
    """A bound on the error of a dot product computed in `precision` (any order of its sums) relative to the
    exact one."""
    largest = float(np.sqrt(_largest_squared_norm(queries) * _largest_squared_norm(gallery)))
    return 2.0 * queries.shape[1] * np.finfo(precision).eps * largest


def exact_pair_scores(
    queries: np.ndarray, gallery: np.ndarray, rows: np.ndarray, columns: np.ndarray, pairs_per_step: int = 512
) -> np.ndarray:
    """exact_scores(queries[rows], gallery[columns]), the same bits, in bounded memory and without the
    float64 copies of both sides."""
    scores = np.empty(len(rows), dtype=np.float64)
    step = min(len(rows), pairs_per_step)
    left = np.empty((step, queries.shape[1]), dtype=np.float64)
    right = np.empty_like(left)
    for start in range(0, len(rows), pairs_per_step):
        stop = min(start + pairs_per_step, len(rows))
        products, other = left[: stop - start], right[: stop - start]
        # Cast both sides, then multiply in float64, as exact_scores does (so the multiply runs on two float64
        # arrays rather than casting as it goes); the sum runs along the same contiguous axis.
        np.copyto(products, queries[rows[start:stop]])
        np.copyto(other, gallery[columns[start:stop]])
        np.multiply(products, other, out=products)
        products.sum(axis=1, out=scores[start:stop])
    return scores


def exact_table_scores(
    queries: np.ndarray, gallery: np.ndarray, columns: np.ndarray, queries_per_step: int = 32
) -> np.ndarray:
    """exact_scores(queries[:, None], gallery[columns]) for a (queries, m) table of gallery rows: the same
    bits, with each query cast to float64 once rather than once per pair, in bounded memory."""
    scores = np.empty(columns.shape, dtype=np.float64)
    step = min(len(columns), queries_per_step)
    products = np.empty((step, columns.shape[1], gallery.shape[1]), dtype=np.float64)
    query = np.empty((step, 1, gallery.shape[1]), dtype=np.float64)
    for start in range(0, len(columns), queries_per_step):
        stop = min(start + queries_per_step, len(columns))
        rows_products, rows_query = products[: stop - start], query[: stop - start]
        np.copyto(rows_query[:, 0], queries[start:stop])
        np.copyto(rows_products, gallery[columns[start:stop]])
        np.multiply(rows_products, rows_query, out=rows_products)
        rows_products.sum(axis=-1, out=scores[start:stop])
    return scores


def order_pairs_by_ranking_rule(rows: np.ndarray, scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The order of (row, score, id) triples: by row, then by the ranking rule within each row."""
    return np.lexsort((ids, -scores, rows))
