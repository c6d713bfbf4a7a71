"""What every task's pairing (its `pairing` module, clipeval.tasks) checks of two models' ranks records."""

from clipeval.errors import ClipevalError


def require_same(first: dict, second: dict, second_path, keys, what: str) -> None:
    """Refuse, naming `second_path`, a record whose `keys` differ from the first's."""
    for key in keys:
        if first[key] != second[key]:
            raise ClipevalError(
                f"{second_path}: its {what} differ from the first model's; a paired comparison needs the same queries"
            )
