"""Write-then-rename, so a killed job never leaves an artifact that looks finished."""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path


def _partial_prefix(final_name: str) -> str:
    return f".{final_name}.partial-"


def _temporary_sibling(final: Path) -> Path:
    return final.with_name(f"{_partial_prefix(final.name)}{os.getpid()}")


def is_partial_of(name: str, final_name: str) -> bool:
    """Whether `name` is what an unfinished atomic_output of `final_name` leaves beside it."""
    return name.startswith(_partial_prefix(final_name))


def _remove_stale_partials(final: Path) -> None:
    """Leftovers of killed writers: only one job ever writes a given output."""
    for stale in final.parent.iterdir():
        if is_partial_of(stale.name, final.name):
            _remove(stale)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextmanager
def atomic_output(final):
    """Yield a temporary path beside `final`; rename it into place on success.

    Works for files and directories (an LMDB store). On any exception the
    temporary is removed and `final` is left as it was.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(final)
    temporary = _temporary_sibling(final)
    try:
        yield temporary
    except BaseException:
        _remove(temporary)
        raise
    if final.is_dir() and not final.is_symlink():
        shutil.rmtree(final)
    os.replace(temporary, final)
