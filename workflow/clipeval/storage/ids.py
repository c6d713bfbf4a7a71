"""Id validation shared by every reader: ids are non-negative integers."""

from clipeval.errors import ClipevalError

# Ids are stored as int64 (numpy arrays, FAISS labels).
ID_LIMIT = 2**63


def require_id(value, where: str, field: str) -> int:
    """Return `value` as an id, or raise naming `where` (file:line) and `field`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ClipevalError(f"{where}: {field} must be a non-negative integer, got {value!r}")
    if value >= ID_LIMIT:
        raise ClipevalError(f"{where}: {field} {value} is too large (ids are below 2^63)")
    return value
