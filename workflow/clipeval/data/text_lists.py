"""Plain-text list files that classification sources ship: prompt templates, class names."""

from pathlib import Path

from clipeval.errors import ClipevalError


def nonblank_lines(path, what) -> list[tuple[int, str]]:
    path = Path(path)
    if not path.is_file():
        raise ClipevalError(f"{path}: {what} file not found")
    lines = [(number, line.rstrip("\r")) for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)]
    return [(number, line) for number, line in lines if line.strip()]


def read_templates(path) -> list[str]:
    templates = []
    for number, line in nonblank_lines(path, "templates"):
        if "{}" not in line:
            raise ClipevalError(f"{path}:{number}: template {line.strip()!r} has no {{}} for the class name")
        templates.append(line.strip())
    if not templates:
        raise ClipevalError(f"{path}: no templates")
    return templates
