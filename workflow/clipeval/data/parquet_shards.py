"""Parquet shards as the Hugging Face hub holds image datasets (data/test-00000-of-00002.parquet, …): a row per
image, the image's encoded bytes in a column (a binary column, or the hub's Image feature: a struct of `bytes`
and `path`), captions or a label in others.

Shards are read in the order of their file names (under the folder, its
subfolders included), rows in file order, only the columns named (pyarrow):
one row group's images are in memory at a time, and a row group whose
columns would take more than MAX_ROW_GROUP_BYTES decompressed is refused
before it is read. A hub repository downloaded whole holds every split's
shards (data/train-…, data/test-…, or a folder per split): where the
shards' names or folders say their split, only the split asked for is read,
and the others are left out with a note.
"""

import json
from collections.abc import Iterator
from pathlib import Path

from clipeval.errors import ClipevalError

# The splits hub datasets name their shards or shard folders by.
KNOWN_SPLITS = ("train", "validation", "valid", "val", "dev", "test")


def split_of(relative: Path) -> str | None:
    """The split a shard's path under the folder names: SPLIT-….parquet or SPLIT.parquet, else a folder SPLIT."""
    named = relative.name.removesuffix(".parquet").split("-", 1)[0]
    if named in KNOWN_SPLITS:
        return named
    return next((part for part in reversed(relative.parts[:-1]) if part in KNOWN_SPLITS), None)


def shard_files(folder, split: str) -> list[Path]:
    """The folder's shards of `split` in name order: every shard, where none names a split."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClipevalError(f"{folder}: parquet folder not found")
    shards = sorted(folder.rglob("*.parquet"))
    if not shards:
        raise ClipevalError(f"{folder}: no .parquet files")
    splits = {shard: split_of(shard.relative_to(folder)) for shard in shards}
    if not any(splits.values()):
        return shards
    unnamed = [shard for shard in shards if splits[shard] is None]
    if unnamed:
        raise ClipevalError(
            f"{unnamed[0]}: its name and folders say no split, beside shards that do: give the folder of one split"
        )
    chosen = [shard for shard in shards if splits[shard] == split]
    others = sorted({name for name in splits.values() if name != split})
    if not chosen:
        raise ClipevalError(f"{folder}: no {split} shards (it holds {', '.join(others)}): set split")
    if others:
        print(f"note: {folder}: read its {len(chosen)} {split} shards; left out those of {', '.join(others)}")
    return chosen


# The most bytes the columns read may take once decompressed, per row group (a row group is read whole): a hub
# shard's row groups hold some hundred MB; a few KB of a compressed column can claim gigabytes.
MAX_ROW_GROUP_BYTES = 1 << 30


def row_groups(shard: Path, columns: list[str]) -> Iterator[tuple[dict, dict]]:
    """({column: its values as Python objects}, the schema's Hugging Face metadata or {}) per row group, reading
    only `columns`, each row group's size checked before it is read."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(shard)
        schema = parquet.schema_arrow
        missing = [column for column in columns if column not in schema.names]
        if missing:
            raise ClipevalError(f"{shard}: no column {missing[0]!r} (columns: {', '.join(schema.names)})")
        hub = _hub_metadata(schema)
        for group in range(parquet.num_row_groups):
            size = _decompressed_bytes(parquet.metadata.row_group(group), columns)
            if size > MAX_ROW_GROUP_BYTES:
                raise ClipevalError(
                    f"{shard}: row group {group} takes {size:,} bytes in the columns read once decompressed, more than"
                    f" the {MAX_ROW_GROUP_BYTES:,} clipeval reads at once"
                )
            table = parquet.read_row_group(group, columns=columns)
            yield {column: table.column(column).to_pylist() for column in columns}, hub
    except ClipevalError:
        raise
    except Exception as error:  # pyarrow raises its own error types for a damaged file
        raise ClipevalError(f"{shard}: not a readable parquet file ({type(error).__name__})") from None


def _decompressed_bytes(row_group, columns: list[str]) -> int:
    """What the leaf columns under `columns` take decompressed in this row group, as its metadata says."""
    leaves = (row_group.column(index) for index in range(row_group.num_columns))
    return sum(leaf.total_uncompressed_size for leaf in leaves if leaf.path_in_schema.split(".")[0] in columns)


def _hub_metadata(schema) -> dict:
    metadata = (schema.metadata or {}).get(b"huggingface")
    try:
        hub = json.loads(metadata) if metadata else {}
    except ValueError:
        hub = {}
    return hub if isinstance(hub, dict) else {}


def image_bytes(value, where: str) -> bytes:
    """An image cell's encoded bytes: the cell itself, or the `bytes` of the hub's Image struct."""
    if isinstance(value, dict):
        value = value.get("bytes")
    if not isinstance(value, bytes) or not value:
        raise ClipevalError(f"{where}: the image cell holds no encoded image bytes")
    return value


def rows(folder, split: str, columns: list[str]) -> Iterator[tuple[str, dict, dict]]:
    """(where, {column: value}, the shard's hub metadata) per row of the split's shards, in name order."""
    for shard in shard_files(folder, split):
        row = 0
        for values, hub in row_groups(shard, columns):
            for index in range(len(values[columns[0]])):
                yield f"{shard}: row {row}", {column: values[column][index] for column in columns}, hub
                row += 1
