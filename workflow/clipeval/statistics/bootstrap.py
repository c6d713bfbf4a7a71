"""Percentile bootstrap intervals over resampled queries.

Samples are `{stream: [fold rows, ...]}`: a stream is one query set (the t2i
queries, the i2t queries, the images of a classification set), split into the
folds its metrics are computed within; each fold is an array whose rows are
queries. A replicate draws every fold's rows with replacement, in a fixed
order from one seeded generator, so two calls with the same sample shapes and
seed draw the same queries: that is what makes a paired comparison paired.
"""

import numpy as np

CONFIDENCE = 95.0


def flatten(tree: dict, prefix=()) -> dict:
    """{("t2i", "R@1"): 17.7, ...} from nested dicts of numbers (or None)."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten(value, (*prefix, key)))
        else:
            flat[(*prefix, key)] = value
    return flat


def unflatten(flat: dict) -> dict:
    tree = {}
    for path, value in flat.items():
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return tree


def resample(samples: dict, rng: np.random.Generator) -> dict:
    # np.take copies the same rows as indexing, several times faster on rows of a few columns.
    return {
        stream: [np.take(rows, rng.integers(0, len(rows), len(rows)), axis=0) for rows in samples[stream]]
        for stream in sorted(samples)
    }


def percentile_intervals(statistic, samples: dict, replicates: int, seed: int) -> dict:
    """The 95% percentile interval of every number `statistic(samples)` returns, as [low, high].

    A number that is None (undefined) gets None.
    """
    return intervals_of_draws(replicate_draws([statistic], samples, replicates, seed)[0])


def replicate_draws(statistics: list, samples: dict, replicates: int, seed: int) -> list[dict]:
    """Per statistic, {path: [its value in each replicate]}: every statistic over the same resampled queries in
    each replicate, as percentile_intervals draws them for any one of them."""
    rng = np.random.default_rng(seed)
    draws = [{} for _ in statistics]
    for _ in range(replicates):
        resampled = resample(samples, rng)
        for statistic, drawn in zip(statistics, draws):
            for path, value in flatten(statistic(resampled)).items():
                drawn.setdefault(path, []).append(value)
    return draws


def intervals_of_draws(draws: dict) -> dict:
    """The 95% percentile interval of each path's replicate values; None where a replicate's is undefined."""
    tail = (100.0 - CONFIDENCE) / 2
    intervals = {}
    for path, values in draws.items():
        if any(value is None for value in values):
            intervals[path] = None
        else:
            low, high = np.percentile(np.array(values, dtype=np.float64), [tail, 100.0 - tail])
            intervals[path] = [float(low), float(high)]
    return unflatten(intervals)


def difference_of_draws(first: dict, second: dict) -> dict:
    """first − second, replicate by replicate, as `difference` takes it of each replicate's numbers."""
    return {
        path: [None if a is None or b is None else a - b for a, b in zip(values, second[path])]
        for path, values in first.items()
    }


def difference(first: dict, second: dict) -> dict:
    """first − second, number by number; None where either is undefined."""
    flat_second = flatten(second)
    return unflatten(
        {
            path: None if value is None or flat_second[path] is None else value - flat_second[path]
            for path, value in flatten(first).items()
        }
    )


def bootstrap_record(replicates: int, seed: int) -> dict:
    return {
        "replicates": replicates,
        "seed": seed,
        "confidence": CONFIDENCE,
        "method": "percentile; queries resampled with replacement within each fold",
    }
