"""Feature files: `{"image_id": 3, "feature": [...]}` / `{"text_id": 12, "feature": [...]}`.

Features are held as one float32 matrix per side, with an int64 id vector.

Parsing the jsonl costs more than the search that follows it, so the writer
leaves the arrays beside it in a sidecar (FILE.jsonl.arrays) that names the
digest of the jsonl it holds (a sha256 over sha256s of its pieces, which
hash in parallel). A reader uses the sidecar only when the jsonl's bytes hash
to that digest and the arrays to theirs: a sidecar can never stand
for another file, an edited one, or itself damaged. Anyone can compute those
digests, though, so sidecars are written and read only under the results
folder the workflow writes (OWN_RESULTS): beside feature files from elsewhere
(a model's precomputed features) a sidecar could be anyone's, and the jsonl
is parsed.
"""

import itertools
import os
from pathlib import Path

import numpy as np
import orjson

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output
from clipeval.storage.digests import file_piecewise_sha256, piecewise_sha256
from clipeval.storage.jsonl import read_keyed_jsonl, write_jsonl

SIDECAR_SUFFIX = ".arrays"
# Where the workflow writes its artifacts (planning/artifacts.RESULTS), from the working directory.
OWN_RESULTS = Path("results")
_SIDECAR_MAGIC = b"clipeval feature arrays 2\n"  # 1 named the jsonl by its plain sha256

ID_KEYS = ("image_id", "text_id", "class_id")


def write_features(path, id_key: str, ids: np.ndarray, matrix: np.ndarray) -> None:
    write_feature_batches(path, id_key, [(ids, matrix)])


def write_feature_batches(path, id_key: str, batches) -> int:
    """Stream (ids, matrix) batches to one file as they come; it appears only when all are written,
    its sidecar after it."""
    assert id_key in ID_KEYS
    written_ids, written = [], []

    def rows():
        for ids, matrix in batches:
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            written_ids.append(np.asarray(ids, dtype=np.int64))
            written.append(matrix)
            for feature_id, row in zip(ids.tolist(), matrix):
                yield {id_key: feature_id, "feature": row}

    count = write_jsonl(path, rows())
    if count and in_own_results(path):
        _write_sidecar(Path(path), id_key, np.concatenate(written_ids), np.concatenate(written))
    return count


def in_own_results(path) -> bool:
    """Whether `path` lies in the results folder of the working directory, links followed."""
    return Path(path).resolve().is_relative_to(OWN_RESULTS.resolve())


def sidecar_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _jsonl_digest(path) -> str:
    return file_piecewise_sha256(path)


def _arrays_digest(arrays) -> str:
    view = memoryview(arrays)
    return piecewise_sha256(len(view), lambda start, stop: view[start:stop])


def _write_sidecar(path: Path, id_key: str, ids: np.ndarray, matrix: np.ndarray) -> None:
    """Only arrays that parsing the jsonl would give back unchanged get a sidecar: float32 values
    round-trip through orjson's shortest form, and the checks read_features makes pass."""
    finite_and_nonzero = np.isfinite(matrix).all() and matrix.any(axis=1).all()
    unique_ids = (ids >= 0).all() and len(np.unique(ids)) == len(ids)
    if not (
        finite_and_nonzero and unique_ids and matrix.shape[1] <= MAX_DIMENSION and not _too_large(_norms(matrix)).any()
    ):
        return
    arrays = ids.astype("<i8").tobytes() + matrix.astype("<f4").tobytes()
    header = {
        "jsonl_digest": _jsonl_digest(path),
        "arrays_digest": _arrays_digest(arrays),
        "id_key": id_key,
        "count": len(ids),
        "dimension": matrix.shape[1],
    }
    with atomic_output(sidecar_path(path)) as temporary:
        Path(temporary).write_bytes(_SIDECAR_MAGIC + orjson.dumps(header) + b"\n" + arrays)


def _read_sidecar(path: Path, id_key: str):
    """(ids, matrix) from the sidecar when it holds exactly this file's features, else None."""
    if not sidecar_path(path).is_file():
        return None
    try:
        header, arrays = _sidecar_contents(path, id_key)
        if header is None or _jsonl_digest(path) != header["jsonl_digest"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):  # orjson's decode error is a ValueError
        return None
    count, dimension = int(header["count"]), int(header["dimension"])
    ids = np.frombuffer(arrays, dtype="<i8", count=count).astype(np.int64, copy=False)
    matrix = np.frombuffer(arrays, dtype="<f4", offset=8 * count).reshape(count, dimension)
    return ids, matrix.astype(np.float32, copy=False)


def _sidecar_contents(path: Path, id_key: str):
    """(header, arrays) of the sidecar when its arrays are whole and hash to the header's digest, else
    (None, None)."""
    with open(sidecar_path(path), "rb") as handle:
        if handle.readline() != _SIDECAR_MAGIC:
            return None, None
        header = orjson.loads(handle.readline())
        # Read into an uninitialised buffer (a bytearray's zero fill took longer than the read), so the
        # arrays are writable views of it rather than copies.
        arrays = np.empty(os.fstat(handle.fileno()).st_size - handle.tell(), dtype=np.uint8)
        if handle.readinto(arrays) != len(arrays):
            return None, None
    count, dimension = int(header["count"]), int(header["dimension"])
    if (
        header["id_key"] != id_key
        or len(arrays) != count * (8 + 4 * dimension)
        or _arrays_digest(arrays) != header["arrays_digest"]
    ):
        return None, None
    return header, arrays


# The most values a feature vector may have: CLIP embeddings have 512 to
# 1,280, and a file of a million-dimensional rows would fill memory long
# before its dimension check.
MAX_DIMENSION = 16_384


def read_features(path, id_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (ids, float32 matrix) after checking ids, dimensions and values."""
    path = Path(path)
    if path.is_file() and in_own_results(path):
        arrays = _read_sidecar(path, id_key)
        if arrays is not None:
            return arrays
    ids, rows, places = [], [], []
    for where, feature_id, row in read_keyed_jsonl(path, id_key):
        feature = row.get("feature")
        if not isinstance(feature, list) or not feature:
            raise ClipevalError(f"{where}: {id_key} {feature_id} has no feature list")
        if len(feature) > MAX_DIMENSION:
            raise ClipevalError(
                f"{where}: {id_key} {feature_id} has {len(feature):,} feature values, more than the"
                f" {MAX_DIMENSION:,} clipeval reads"
            )
        ids.append(feature_id)
        rows.append(feature)
        places.append(where)
    if not ids:
        raise ClipevalError(f"{path}: no features")
    _check_numbers(id_key, ids, rows, places)
    dims = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    if (dims != dims[0]).any():
        bad = int(np.argmax(dims != dims[0]))
        raise ClipevalError(f"{places[bad]}: {id_key} {ids[bad]} has dimension {dims[bad]}, expected {dims[0]}")
    try:
        with np.errstate(over="ignore"):  # past float32's range is infinite, refused by _check_values
            matrix = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2:
        raise ClipevalError(f"{path}: feature values must be flat lists of numbers")
    ids = np.array(ids, dtype=np.int64)
    _check_values(id_key, ids, matrix, places)
    return ids, matrix


def _check_numbers(id_key, ids, rows, places) -> None:
    """JSON numbers only: numpy would read "1.5" and true as numbers too."""
    if set(map(type, itertools.chain.from_iterable(rows))) <= {int, float}:
        return
    bad = next(index for index, row in enumerate(rows) if any(type(value) not in (int, float) for value in row))
    value = next(value for value in rows[bad] if type(value) not in (int, float))
    raise ClipevalError(
        f"{places[bad]}: {id_key} {ids[bad]} has a feature value that is not a number:"
        f" {orjson.dumps(value).decode()[:40]}"
    )


# Past this norm, the float32 product of two features can overflow.
LARGEST_NORM = float(np.sqrt(np.finfo(np.float32).max))


def _norms(matrix):
    return np.sqrt(np.square(matrix, dtype=np.float64).sum(axis=1))


def _too_large(norms):
    return norms > LARGEST_NORM


def _check_values(id_key, ids, matrix, places) -> None:
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = int(np.argmin(finite))
        raise ClipevalError(
            f"{places[bad]}: {id_key} {ids[bad]} has a NaN or infinite feature value (or one past float32's range)"
        )
    norms = _norms(matrix)
    if _too_large(norms).any():
        bad = int(np.argmax(_too_large(norms)))
        raise ClipevalError(
            f"{places[bad]}: {id_key} {ids[bad]} has a feature of norm {norms[bad]:.3g}, past the"
            f" {LARGEST_NORM:.3g} at which float32 products overflow"
        )
    zero = ~matrix.any(axis=1)
    if zero.any():
        bad = int(np.argmax(zero))
        raise ClipevalError(f"{places[bad]}: {id_key} {ids[bad]} has a zero-norm feature")


def check_same_dimension(image_path, image_matrix, text_path, text_matrix) -> None:
    if image_matrix.shape[1] != text_matrix.shape[1]:
        raise ClipevalError(
            f"{image_path} has {image_matrix.shape[1]}-dimensional features but {text_path} has {text_matrix.shape[1]}"
        )


def gather_features(shard_paths, id_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate shard files in the order given; ids must keep ascending across shards."""
    parts = [read_features(path, id_key) for path in shard_paths]
    ids = np.concatenate([part_ids for part_ids, _ in parts])
    if len(np.unique(ids)) != len(ids) or (np.diff(ids) <= 0).any():
        position = int(np.argmax(np.diff(ids) <= 0)) + 1
        raise ClipevalError(
            f"shards out of order or overlapping at {id_key} {ids[position]}: " + ", ".join(str(p) for p in shard_paths)
        )
    return ids, np.concatenate([matrix for _, matrix in parts])
