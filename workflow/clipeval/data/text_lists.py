"""Plain-text list files that classification sources ship: prompt templates, class names."""

from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.storage.text import without_bom


def nonblank_lines(path, what) -> list[tuple[int, str]]:
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: {what} file not found")
    lines = []
    for number, raw in enumerate(without_bom(path.read_bytes()).split(b"\n"), 1):
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            raise ClipevalError(f"{path}:{number}: not UTF-8 text") from None
        if line.strip():
            lines.append((number, line))
    return lines


def read_templates(path) -> list[str]:
    templates = []
    for number, line in nonblank_lines(path, "templates"):
        if "{}" not in line:
            raise ClipevalError(f"{path}:{number}: template {line.strip()!r} has no {{}} for the class name")
        templates.append(line.strip())
    if not templates:
        raise ClipevalError(f"{path}: no templates")
    return templates
