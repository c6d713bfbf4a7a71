"""jsonl reading (orjson, line by line) and writing (jsonlines with orjson)."""

from collections.abc import Iterable, Iterator
from pathlib import Path

import jsonlines
import orjson

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output
from clipeval.storage.ids import require_id
from clipeval.storage.text import without_bom


def _dumps(obj) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY).decode()


# The longest line read: a caption is well under a kilobyte and a feature
# vector of 16,384 values about 400 KB. A file of one endless line must not
# be read into memory whole.
MAX_LINE_BYTES = 16 << 20


def read_jsonl(path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each line; malformed or overlong lines raise ClipevalError."""
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: file not found")
    with open(path, "rb") as handle:
        # Line numbers count blank lines too, so an error points at the line an editor shows.
        for line_number, line in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(line) > MAX_LINE_BYTES:
                raise ClipevalError(f"{path}:{line_number}: line longer than {MAX_LINE_BYTES >> 20} MiB, not read")
            if not line.strip():
                continue
            try:
                obj = orjson.loads(without_bom(line) if line_number == 1 else line)
            except orjson.JSONDecodeError:
                raise ClipevalError(f"{path}:{line_number}: malformed JSON line") from None
            if not isinstance(obj, dict):
                raise ClipevalError(f"{path}:{line_number}: expected a JSON object")
            yield line_number, obj


def read_keyed_jsonl(path, id_key: str, duplicate: str = "duplicate {key} {id}") -> Iterator[tuple[str, int, dict]]:
    """Yield ("file:line", id, object) per line; ids must be unique non-negative integers.

    `duplicate` words the error for a repeated id ({key} and {id} are filled in).
    """
    first_line = {}
    for line, row in read_jsonl(path):
        where = f"{path}:{line}"
        row_id = require_id(row.get(id_key), where, id_key)
        if row_id in first_line:
            message = duplicate.format(key=id_key, id=row_id)
            raise ClipevalError(f"{where}: {message} (first on line {first_line[row_id]})")
        first_line[row_id] = line
        yield where, row_id, row


def write_jsonl(path, rows: Iterable[dict]) -> int:
    """Write rows atomically; return how many were written."""
    count = 0
    with atomic_output(path) as temporary:
        with open(temporary, "w", encoding="utf-8") as handle:
            writer = jsonlines.Writer(handle, dumps=_dumps)
            for row in rows:
                writer.write(row)
                count += 1
    return count


def read_json_value(path):
    """The JSON value a file holds, whatever its type."""
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: file not found")
    try:
        return orjson.loads(without_bom(path.read_bytes()))
    except orjson.JSONDecodeError as error:
        raise ClipevalError(f"{path}: malformed JSON ({error})") from None


def read_json(path) -> dict:
    """A JSON file holding one object."""
    data = read_json_value(path)
    if not isinstance(data, dict):
        raise ClipevalError(f"{path}: expected a JSON object at the top level")
    return data


def parse_json_option(text, option: str):
    """The value of a command-line option that carries JSON, or None when it is absent."""
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise ClipevalError(f"{option}: malformed JSON ({error})") from None


def write_json(path, obj, compact: bool = False) -> None:
    """Write key-sorted JSON atomically, so equal content gives equal bytes; pretty unless compact."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | (0 if compact else orjson.OPT_INDENT_2)
    with atomic_output(path) as temporary:
        Path(temporary).write_bytes(orjson.dumps(obj, option=option) + b"\n")
