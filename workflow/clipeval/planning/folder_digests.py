"""A digest of the path and content of every file under a folder, for folders Snakemake cannot track.

Each file's sha256 is remembered with its size, modification time, inode and
status-change time in a cache file per folder, so a run hashes only new or
changed files (an ImageNet-sized folder once), and a touched but unchanged
image changes nothing. The status-change time is the one a user cannot set:
a file replaced by another of the same size, its modification time put back,
is hashed again. The cache is written whole or not at all; one that cannot be
read (a disk that filled while an older version wrote it), or an entry of
another form, is hashed afresh.
"""

import hashlib
import json
from pathlib import Path

from clipeval.storage.atomic import atomic_output
from clipeval.storage.digests import file_sha256

CACHE_DIR = Path(".snakemake/clipeval-image-digests")


def folder_digest(root: Path, cache_dir: Path = CACHE_DIR) -> str:
    if not root.is_dir():
        return "missing"  # the prepare command says so, naming the folder
    folder_key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    cache_file = cache_dir / f"{folder_key}.json"
    cache = _read_cache(cache_file)
    fresh, total = {}, hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name, status = path.relative_to(root).as_posix(), path.stat()
        stamp = [status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns]
        known = cache.get(name)
        fresh[name] = known if isinstance(known, list) and known[:-1] == stamp else [*stamp, file_sha256(path)]
        total.update(f"{name}\0{fresh[name][-1]}\n".encode())
    if fresh != cache:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(cache_file) as temporary:
            Path(temporary).write_text(json.dumps(fresh))
    return total.hexdigest()[:16]


def _read_cache(cache_file: Path) -> dict:
    """{file name: [size, mtime_ns, inode, ctime_ns, sha256]}; empty when there is none, or none that reads as
    one."""
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}
