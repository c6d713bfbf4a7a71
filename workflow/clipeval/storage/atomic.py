"""Write-then-rename, so a killed job never leaves an artifact that looks finished."""

import errno
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from clipeval.errors import ClipevalError

# What writing can fail with, whatever is written: a full disk or quota, a file size limit, a read-only mount.
_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


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


def make_folder(path: Path) -> None:
    """mkdir -p, naming the file that stands where a folder should be (mkdir says only "File exists")."""
    for folder in [*reversed(path.parents), path]:
        if folder.exists() and not folder.is_dir():
            raise ClipevalError(f"{folder}: not a folder, so nothing can be written into it")
    path.mkdir(parents=True, exist_ok=True)


@contextmanager
def atomic_output(final):
    """Yield a temporary path beside `final`; rename it into place on success.

    Works for files and directories (an LMDB store). On any exception the
    temporary is removed and `final` is left as it was.
    """
    final = Path(final)
    make_folder(final.parent)
    _remove_stale_partials(final)
    temporary = _temporary_sibling(final)
    try:
        yield temporary
    except OSError as error:
        _remove(temporary)
        if error.errno in _WRITE_ERRORS and not error.filename:
            # A failed write() names no file; the output being written is the one to name.
            raise ClipevalError(f"{final}: cannot write ({error.strerror})") from None
        raise
    except BaseException:
        _remove(temporary)
        raise
    if final.is_dir() and not final.is_symlink():
        shutil.rmtree(final)
    os.replace(temporary, final)
