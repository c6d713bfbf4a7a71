"""Which of a run's checkpoint files are ready: unchanged in size and modification time for a settling time,
and written whole as their format tells (models/checkpoint_files.py)."""

import os
from dataclasses import dataclass, field

from clipeval.models.checkpoint_files import written_whole


@dataclass(frozen=True)
class Sighting:
    signature: tuple[int, int]  # (size, modification time in ns)
    since: float  # when the file was first seen with this signature


def signature(path: str) -> tuple[int, int] | None:
    """(size, modification time in ns) of a file; None when it is gone or not a file."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_size, status.st_mtime_ns) if os.path.isfile(path) else None


@dataclass
class Watch:
    """The files seen so far and since when each has been as it is now."""

    settle: float
    sightings: dict[str, Sighting] = field(default_factory=dict)

    def ready(self, paths: list[str], now: float, look=signature, whole=written_whole) -> dict[str, tuple[int, int]]:
        """{path: signature} of the `paths` that have not changed for `settle` seconds and are written whole.
        A path no longer listed or gone is forgotten; a changed one starts settling again."""
        seen = {}
        for path in paths:
            current = look(path)
            if current is None:
                continue
            earlier = self.sightings.get(path)
            seen[path] = earlier if earlier is not None and earlier.signature == current else Sighting(current, now)
        self.sightings = seen
        return {
            path: sighting.signature
            for path, sighting in seen.items()
            if sighting.signature[0] > 0
            and now - sighting.since >= self.settle
            and whole(path)
            and look(path) == sighting.signature  # not changed while it was read
        }
