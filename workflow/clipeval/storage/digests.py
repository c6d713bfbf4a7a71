"""Content digests of files, for provenance and for telling one input from another."""

import hashlib
from collections.abc import Iterable
from pathlib import Path


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def listing_sha256(files: Iterable[tuple[str, str]]) -> str:
    """sha256 of (relative name, file sha256) pairs in name order: a folder's content, its file names included."""
    digest = hashlib.sha256()
    for name, sha in sorted(files):
        digest.update(f"{name}\0{sha}\n".encode())
    return digest.hexdigest()


def folder_files(root: Path) -> list[Path]:
    """Every regular file under root (links followed to their files), in name order."""
    return sorted(path for path in root.rglob("*") if path.is_file())


def folder_sha256(root) -> str:
    root = Path(root)
    return listing_sha256((path.relative_to(root).as_posix(), file_sha256(path)) for path in folder_files(root))
