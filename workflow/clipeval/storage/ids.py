"""Id validation shared by every reader: ids are non-negative integers."""

from clipeval.errors import ClipevalError


def require_id(value, where: str, field: str) -> int:
    """Return `value` as an id, or raise naming `where` (file:line) and `field`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ClipevalError(f"{where}: {field} must be a non-negative integer, got {value!r}")
    return value
