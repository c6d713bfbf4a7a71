"""Top-k prediction files, read into one padded id matrix per direction, and lined up with the ground truth."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.retrieval.directions import DIRECTIONS, Direction
from clipeval.storage.ids import require_id
from clipeval.storage.jsonl import read_keyed_jsonl

PADDING = -1


@dataclass(frozen=True)
class Predictions:
    path: Path
    direction: Direction
    query_ids: np.ndarray  # int64, file order
    ranked_ids: np.ndarray  # (n_queries, longest list), PADDING where a list is shorter


def load_predictions(path, direction: str) -> Predictions:
    path = Path(path)
    direction = DIRECTIONS[direction]
    query_key, predicted_key = direction.query_key, direction.predicted_key
    query_ids, lists = [], []
    for where, query_id, row in read_keyed_jsonl(path, query_key, "duplicate prediction for {key} {id}"):
        ranked = row.get(predicted_key)
        if not isinstance(ranked, list):
            raise ClipevalError(f"{where}: {query_key} {query_id} needs a {predicted_key} list")
        ranked = [require_id(i, f"{where}: {query_key} {query_id}", predicted_key) for i in ranked]
        if len(set(ranked)) != len(ranked):
            repeated = next(i for i in ranked if ranked.count(i) > 1)
            raise ClipevalError(f"{where}: {query_key} {query_id} lists {direction.item_key} {repeated} twice")
        lists.append(ranked)
        query_ids.append(query_id)
    if not query_ids:
        raise ClipevalError(f"{path}: no predictions")
    width = max(len(ranked) for ranked in lists)
    ranked_ids = np.full((len(lists), width), PADDING, dtype=np.int64)
    for row, ranked in enumerate(lists):
        ranked_ids[row, : len(ranked)] = ranked
    return Predictions(path, direction, np.array(query_ids, dtype=np.int64), ranked_ids)


def align_predictions(predictions: Predictions, query_ids: np.ndarray) -> np.ndarray:
    """Rows of `predictions.ranked_ids` in `query_ids` order; every query must be predicted once."""
    query_name = predictions.direction.query_key
    order = np.argsort(predictions.query_ids, kind="stable")
    sorted_ids = predictions.query_ids[order]
    missing = ~np.isin(query_ids, sorted_ids)
    if missing.any():
        raise ClipevalError(
            f"{predictions.path}: no prediction for {query_name} {query_ids[np.argmax(missing)]}"
            f" ({int(missing.sum())} missing)"
        )
    unknown = ~np.isin(sorted_ids, query_ids)
    if unknown.any():
        raise ClipevalError(f"{predictions.path}: prediction for unknown {query_name} {sorted_ids[np.argmax(unknown)]}")
    return predictions.ranked_ids[order]


def aligned_predictions(predictions: Predictions, query_ids, gallery_ids, ks) -> np.ndarray:
    """The prediction rows in query_ids order, after checking they can answer R@K for every K."""
    ranked = align_predictions(predictions, query_ids)
    too_deep = [k for k in ks if k > ranked.shape[1] and ranked.shape[1] < len(gallery_ids)]
    if too_deep:
        raise ClipevalError(
            f"{predictions.path}: R@{max(too_deep)} needs at least {max(too_deep)} predictions per query,"
            f" the file has {ranked.shape[1]} (raise knn.top_k)"
        )
    predicted = ranked[ranked != PADDING]
    unknown = ~np.isin(predicted, gallery_ids)
    if unknown.any():
        raise ClipevalError(
            f"{predictions.path}: predicted {predictions.direction.item_key}"
            f" {predicted[np.argmax(unknown)]} is not in the gallery"
        )
    return ranked
