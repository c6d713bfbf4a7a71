"""Digests of the content of the files and folders a config names, for inputs Snakemake would judge by their
modification times (or cannot track at all, like folders).

Each file's sha256 is remembered with its size, modification time, inode and
status-change time in a cache file per folder (or file), so a run hashes only
new or changed files (an ImageNet-sized folder once), and a touched but
unchanged file changes nothing. The status-change time is the one a user
cannot set: a file replaced by another of the same size, its modification time
put back, is hashed again. The cache is written whole or not at all; one that
cannot be read (a disk that filled while an older version wrote it), or an
entry of another form, is hashed afresh.
"""

import hashlib
import json
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output
from clipeval.storage.digests import file_sha256, folder_files, listing_sha256

CACHE_DIR = Path(".snakemake/clipeval-content-digests")
MISSING = "missing"  # what the config checks and the commands then name


def folder_digest(root: Path, cache_dir: Path = CACHE_DIR) -> str:
    """A digest of the relative path and content of every file under root."""
    if not root.is_dir():
        return MISSING
    return _digest({path.relative_to(root).as_posix(): path for path in folder_files(root)}, root, cache_dir)


def file_digest(path: Path, cache_dir: Path = CACHE_DIR) -> str:
    if not path.is_file():
        return MISSING
    return _digest({path.name: path}, path, cache_dir)


def _digest(files: dict[str, Path], tracked: Path, cache_dir: Path) -> str:
    cache_file = cache_dir / f"{hashlib.sha256(str(tracked.resolve()).encode()).hexdigest()[:16]}.json"
    cache = _read_cache(cache_file)
    fresh = {}
    for name, path in files.items():
        status = path.stat()
        stamp = [status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns]
        known = cache.get(name)
        fresh[name] = known if isinstance(known, list) and known[:-1] == stamp else [*stamp, file_sha256(path)]
    if fresh != cache:
        _write_cache(cache_file, fresh)
    return listing_sha256((name, entry[-1]) for name, entry in fresh.items())[:16]


def _write_cache(cache_file: Path, cache: dict) -> None:
    """Only a cache: on a full disk or a read-only folder the next run hashes again."""
    try:
        with atomic_output(cache_file) as temporary:
            Path(temporary).write_text(json.dumps(cache))
    except (OSError, ClipevalError):
        pass


def _read_cache(cache_file: Path) -> dict:
    """{file name: [size, mtime_ns, inode, ctime_ns, sha256]}; empty when there is none, or none that reads as
    one."""
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}
