"""Content digests of files, for provenance and for telling one input from another."""

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from clipeval.threads import in_threads


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


# A piecewise digest is the sha256 of a length and of the sha256 of each piece of this many bytes: the
# pieces hash at once on all the job's threads, where one sha256 over the whole runs on one.
PIECE_BYTES = 16 << 20


def piecewise_sha256(size: int, piece) -> str:
    """The piecewise digest of `size` bytes that piece(start, stop) gives back."""
    parts = [(start, min(start + PIECE_BYTES, size)) for start in range(0, size, PIECE_BYTES)]
    pieces = in_threads(lambda start, stop: hashlib.sha256(piece(start, stop)).digest(), parts)
    return hashlib.sha256(size.to_bytes(8, "little") + b"".join(pieces)).hexdigest()


def file_piecewise_sha256(path) -> str:
    with open(path, "rb") as handle:
        return piecewise_sha256(
            os.fstat(handle.fileno()).st_size, lambda start, stop: os.pread(handle.fileno(), stop - start, start)
        )
