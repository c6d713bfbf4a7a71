"""Top-k prediction files, read into one padded id matrix per direction."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ClipevalError
from .ids import require_id
from .jsonl import read_keyed_jsonl
from .knn import DIRECTIONS

PADDING = -1


@dataclass(frozen=True)
class Predictions:
    path: Path
    direction: str
    query_ids: np.ndarray  # int64, file order
    ranked_ids: np.ndarray  # (n_queries, longest list), PADDING where a list is shorter


def load_predictions(path, direction: str) -> Predictions:
    path = Path(path)
    _, _, query_key, predicted_key = DIRECTIONS[direction]
    query_ids, lists = [], []
    for where, query_id, row in read_keyed_jsonl(path, query_key, "duplicate prediction for {key} {id}"):
        ranked = row.get(predicted_key)
        if not isinstance(ranked, list):
            raise ClipevalError(f"{where}: {query_key} {query_id} needs a {predicted_key} list")
        ranked = [require_id(i, f"{where}: {query_key} {query_id}", predicted_key) for i in ranked]
        if len(set(ranked)) != len(ranked):
            repeated = next(i for i in ranked if ranked.count(i) > 1)
            raise ClipevalError(f"{where}: {query_key} {query_id} lists {predicted_key[:-1]} {repeated} twice")
        lists.append(ranked)
        query_ids.append(query_id)
    if not query_ids:
        raise ClipevalError(f"{path}: no predictions")
    width = max(len(ranked) for ranked in lists)
    ranked_ids = np.full((len(lists), width), PADDING, dtype=np.int64)
    for row, ranked in enumerate(lists):
        ranked_ids[row, :len(ranked)] = ranked
    return Predictions(path, direction, np.array(query_ids, dtype=np.int64), ranked_ids)
