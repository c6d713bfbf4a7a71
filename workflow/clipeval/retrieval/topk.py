"""Exact inner-product top-k under the ranking rule (ranking_rule.py).

FAISS finds candidates (a GPU index when faiss sees a GPU). Its float32
scores and tie order are not the ranking rule, so candidates are rescored in
float64 from the stored float32 features, ordered by descending score then
ascending id, and a row whose k-th place could tie with an item beyond the
fetched candidates is searched again with more candidates.
"""

import numpy as np

from clipeval.devices import gpu_number
from clipeval.errors import ClipevalError
from clipeval.retrieval.directions import Direction
from clipeval.retrieval.ranking_rule import exact_scores, order_by_ranking_rule, score_tolerance

_RESCORE_BUDGET_BYTES = 64 << 20
_GPU_MAX_K = 2048  # FAISS GPU flat indexes answer at most this many neighbours


class FaissSearcher:
    """Inner-product search over a gallery: on a GPU when asked (`cuda`, `cuda:N`) or, under `auto`, when
    faiss sees one; on the CPU otherwise. The device names are torch's, as for extraction."""

    def __init__(self, gallery: np.ndarray, device: str = "auto"):
        try:
            import faiss
        except ImportError:
            raise ClipevalError("knn needs FAISS, and no FAISS build is installed: pip install 'clipeval[cpu]',"
                                " or 'clipeval[gpu]' on a CUDA host") from None
        self._faiss = faiss
        self.gallery = gallery
        self.cpu_index = faiss.IndexFlatIP(gallery.shape[1])
        self.cpu_index.add(gallery)
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
            self.gpu_index = faiss.index_cpu_to_gpu(self._resources, number, self.cpu_index)

    @property
    def uses_gpu(self) -> bool:
        return self.gpu_index is not None

    def search(self, queries: np.ndarray, k: int):
        index = self.gpu_index if self.gpu_index is not None and k <= _GPU_MAX_K else self.cpu_index
        scores, positions = index.search(np.ascontiguousarray(queries), k)
        return scores, positions


def rescore(queries: np.ndarray, gallery: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """float64 scores of each query against its candidate gallery rows."""
    dim = queries.shape[1]
    rows_per_chunk = max(1, _RESCORE_BUDGET_BYTES // max(1, positions.shape[1] * dim * 8))
    scores = np.empty(positions.shape, dtype=np.float64)
    for start in range(0, len(queries), rows_per_chunk):
        stop = start + rows_per_chunk
        scores[start:stop] = exact_scores(queries[start:stop, None, :], gallery[positions[start:stop]])
    return scores


def top_k(queries: np.ndarray, gallery: np.ndarray, gallery_ids: np.ndarray, k: int, searcher) -> tuple:
    """Return (ids, scores), each (n_queries, min(k, gallery size)), best first."""
    if k < 1:
        raise ClipevalError(f"top_k must be at least 1, got {k}")
    n_gallery = len(gallery)
    kept = min(k, n_gallery)
    tolerance = score_tolerance(queries, gallery)
    result_ids = np.empty((len(queries), kept), dtype=np.int64)
    result_scores = np.empty((len(queries), kept), dtype=np.float64)
    pending = np.arange(len(queries))
    fetch = min(n_gallery, kept + max(kept, 16))
    while len(pending):
        approximate, positions = searcher.search(queries[pending], fetch)
        exact = rescore(queries[pending], gallery, positions)
        order = order_by_ranking_rule(exact, gallery_ids[positions])
        positions = np.take_along_axis(positions, order, axis=1)[:, :kept]
        exact = np.take_along_axis(exact, order, axis=1)[:, :kept]
        if fetch == n_gallery:
            settled = np.ones(len(pending), dtype=bool)
        else:
            # Nothing unfetched can reach the k-th score: the rows are final.
            settled = approximate[:, -1] + tolerance < exact[:, -1]
        done = pending[settled]
        result_ids[done] = gallery_ids[positions[settled]]
        result_scores[done] = exact[settled]
        pending = pending[~settled]
        fetch = min(n_gallery, fetch * 4)
    return result_ids, result_scores


def prediction_rows(query_ids, ids, scores, direction: Direction):
    """Prediction file rows: the query's id, its ranked item ids and their exact scores."""
    for query_id, row_ids, row_scores in zip(query_ids.tolist(), ids.tolist(), scores.tolist()):
        yield {direction.query_key: query_id, direction.predicted_key: row_ids, "scores": row_scores}
