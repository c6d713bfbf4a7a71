"""A digest of the path and content of every file under a folder, for folders Snakemake cannot track.

Each file's sha256 is remembered with its size and modification time in a
cache file per folder, so a run hashes only new or changed files (an
ImageNet-sized folder once), and a touched but unchanged image changes
nothing. The cache is written whole or not at all; one that cannot be read
(a disk that filled while an older version wrote it) is rebuilt.
"""

import hashlib
import json
from pathlib import Path

from clipeval.storage.atomic import atomic_output

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
        known = cache.get(name)
        if known and known[:2] == [status.st_size, status.st_mtime_ns]:
            fresh[name] = known
        else:
            fresh[name] = [status.st_size, status.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()]
        total.update(f"{name}\0{fresh[name][2]}\n".encode())
    if fresh != cache:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(cache_file) as temporary:
            Path(temporary).write_text(json.dumps(fresh))
    return total.hexdigest()[:16]


def _read_cache(cache_file: Path) -> dict:
    """{file name: [size, mtime_ns, sha256]}; empty when there is none, or none that reads as one."""
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}
