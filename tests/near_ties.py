"""Features whose scores tie, or nearly tie, below what float32 products can tell apart."""

import numpy as np


def unit_rows(rng, n, d):
    rows = rng.normal(size=(n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def near_duplicates(rng, base, copies):
    """Copies of `base` with a few components moved by one float32 step: their exact scores against
    `base` differ by less than float32 scores can tell apart."""
    gallery = np.repeat(base[None], copies, axis=0)
    for row in gallery:
        where = rng.integers(0, len(base), 4)
        row[where] = np.nextafter(row[where], np.where(rng.random(4) < 0.5, -1, 1).astype(np.float32))
    return gallery
