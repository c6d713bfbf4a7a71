"""Feature files: `{"image_id": 3, "feature": [...]}` / `{"text_id": 12, "feature": [...]}`.

Features are held as one float32 matrix per side, with an int64 id vector.
"""

from pathlib import Path

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_keyed_jsonl, write_jsonl

ID_KEYS = ("image_id", "text_id", "class_id")


def write_features(path, id_key: str, ids: np.ndarray, matrix: np.ndarray) -> None:
    write_feature_batches(path, id_key, [(ids, matrix)])


def write_feature_batches(path, id_key: str, batches) -> int:
    """Stream (ids, matrix) batches to one file as they come; it appears only when all are written."""
    assert id_key in ID_KEYS

    def rows():
        for ids, matrix in batches:
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            for feature_id, row in zip(ids.tolist(), matrix):
                yield {id_key: feature_id, "feature": row}

    return write_jsonl(path, rows())


def read_features(path, id_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (ids, float32 matrix) after checking ids, dimensions and values."""
    path = Path(path)
    ids, rows, places = [], [], []
    for where, feature_id, row in read_keyed_jsonl(path, id_key):
        feature = row.get("feature")
        if not isinstance(feature, list) or not feature:
            raise ClipevalError(f"{where}: {id_key} {feature_id} has no feature list")
        ids.append(feature_id)
        rows.append(feature)
        places.append(where)
    if not ids:
        raise ClipevalError(f"{path}: no features")
    dims = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    if (dims != dims[0]).any():
        bad = int(np.argmax(dims != dims[0]))
        raise ClipevalError(
            f"{places[bad]}: {id_key} {ids[bad]} has dimension {dims[bad]}, expected {dims[0]}"
        )
    try:
        matrix = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2:
        raise ClipevalError(f"{path}: feature values must be flat lists of numbers")
    ids = np.array(ids, dtype=np.int64)
    _check_values(id_key, ids, matrix, places)
    return ids, matrix


def _check_values(id_key, ids, matrix, places) -> None:
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = int(np.argmin(finite))
        raise ClipevalError(f"{places[bad]}: {id_key} {ids[bad]} has a NaN or infinite feature value")
    zero = ~matrix.any(axis=1)
    if zero.any():
        bad = int(np.argmax(zero))
        raise ClipevalError(f"{places[bad]}: {id_key} {ids[bad]} has a zero-norm feature")


def check_same_dimension(image_path, image_matrix, text_path, text_matrix) -> None:
    if image_matrix.shape[1] != text_matrix.shape[1]:
        raise ClipevalError(
            f"{image_path} has {image_matrix.shape[1]}-dimensional features but "
            f"{text_path} has {text_matrix.shape[1]}"
        )


def gather_features(shard_paths, id_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate shard files in the order given; ids must keep ascending across shards."""
    parts = [read_features(path, id_key) for path in shard_paths]
    ids = np.concatenate([part_ids for part_ids, _ in parts])
    if len(np.unique(ids)) != len(ids) or (np.diff(ids) <= 0).any():
        position = int(np.argmax(np.diff(ids) <= 0)) + 1
        raise ClipevalError(f"shards out of order or overlapping at {id_key} {ids[position]}: "
                            + ", ".join(str(p) for p in shard_paths))
    return ids, np.concatenate([matrix for _, matrix in parts])
