"""Work that tests in several files need, done once per pytest session however many xdist workers run.

pytest-xdist gives each worker its own session fixtures, so a fixture that
runs an experiment would run it once per worker that asks. Here the first
worker to ask builds it in the directory the workers share; the others wait
for it, then use the same result.
"""

import fcntl
import hashlib
import os
from pathlib import Path


def shared_directory(tmp_path_factory) -> Path:
    """The temporary directory all of this session's workers see: under xdist each worker's base
    directory is a child of it; without workers, the base directory itself."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(root: Path, name: str, build) -> Path:
    """root/name, made by build(root/name) in the first worker that asks; later askers wait on its lock
    and get the same directory. A build that failed fails each later asker with its message."""
    directory, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            raise AssertionError(f"{name}, built for another test, failed:\n{failed.read_text()}")
        if not done.exists():
            try:
                build(directory)
            except BaseException as error:
                failed.write_text(str(error))
                raise
            done.touch()
    return directory


def result_digests(workdir: Path) -> dict[str, str]:
    """{path under workdir: sha256} of every file under results/, LMDB's lock files aside (they hold
    reader slots, not data)."""
    return {
        str(path.relative_to(workdir)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((workdir / "results").rglob("*"))
        if path.is_file() and path.name != "lock.mdb"
    }
