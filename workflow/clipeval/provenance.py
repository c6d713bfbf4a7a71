"""What produced a result: library versions, weights and data identities, config.

Only deterministic values belong here: two runs from scratch must write the
same bytes.
"""

from importlib import metadata

TRACKED_DISTRIBUTIONS = ("clipeval", "torch", "open_clip_torch", "faiss-cpu", "faiss-gpu", "numpy", "lmdb", "pillow")


def library_versions(names=TRACKED_DISTRIBUTIONS) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
