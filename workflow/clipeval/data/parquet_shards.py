"""Parquet shards as the Hugging Face hub holds image datasets (data/test-00000-of-00002.parquet, …): a row per
image, the image's encoded bytes in a column (a binary column, or the hub's Image feature: a struct of `bytes`
and `path`), captions or a label in others.

Shards are read in the order of their file names (under the folder, its
subfolders included), rows in file order, only the columns named (pyarrow):
one shard's images are in memory at a time.
"""

import json
from collections.abc import Iterator
from pathlib import Path

from clipeval.errors import ClipevalError


def shard_files(folder) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        raise ClipevalError(f"{folder}: parquet folder not found")
    shards = sorted(folder.rglob("*.parquet"))
    if not shards:
        raise ClipevalError(f"{folder}: no .parquet files")
    return shards


def read_columns(shard: Path, columns: list[str]) -> tuple[dict, dict]:
    """({column: its values as Python objects}, the schema's Hugging Face metadata or {}), reading only
    `columns`."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(shard)
        missing = [column for column in columns if column not in schema.names]
        if missing:
            raise ClipevalError(f"{shard}: no column {missing[0]!r} (columns: {', '.join(schema.names)})")
        table = pq.read_table(shard, columns=columns)
    except ClipevalError:
        raise
    except Exception as error:  # pyarrow raises its own error types for a damaged file
        raise ClipevalError(f"{shard}: not a readable parquet file ({type(error).__name__})") from None
    metadata = (schema.metadata or {}).get(b"huggingface")
    try:
        hub = json.loads(metadata) if metadata else {}
    except ValueError:
        hub = {}
    return {column: table.column(column).to_pylist() for column in columns}, hub if isinstance(hub, dict) else {}


def image_bytes(value, where: str) -> bytes:
    """An image cell's encoded bytes: the cell itself, or the `bytes` of the hub's Image struct."""
    if isinstance(value, dict):
        value = value.get("bytes")
    if not isinstance(value, bytes) or not value:
        raise ClipevalError(f"{where}: the image cell holds no encoded image bytes")
    return value


def rows(folder, columns: list[str]) -> Iterator[tuple[str, dict, dict]]:
    """(where, {column: value}, the shard's hub metadata) per row, shards in name order."""
    for shard in shard_files(folder):
        values, hub = read_columns(shard, columns)
        for index in range(len(values[columns[0]])):
            yield f"{shard}: row {index}", {column: values[column][index] for column in columns}, hub
