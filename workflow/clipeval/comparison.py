"""Paired comparisons of models on one dataset.

Both models' per-query ranks (the ranks records the score stages write) are
resampled together, so each replicate's difference comes from the same
queries: the interval of a difference is much tighter than the two
models' separate intervals suggest.
"""

from clipeval.errors import ClipevalError
from clipeval.statistics.bootstrap import (
    bootstrap_record,
    difference,
    difference_of_draws,
    intervals_of_draws,
    replicate_draws,
)
from clipeval.storage.ranks_records import read_ranks_record
from clipeval.tasks import TASKS

# Each task's module that pairs its records (its record's `pairing`: check_pairable, stacked_samples), imported
# by name; the code graph counts them as this module's imports (planning/codegraph.py, NAMED_BY_RECORDS). With
# __import__, as cli.py imports commands: the tests read which modules a job loaded from -X importtime.
PAIRINGS = {name: __import__(task.pairing, fromlist=["stacked_samples"]) for name, task in TASKS.items()}


def pairing_of(task: str):
    return PAIRINGS[task]


def check_pairable(first: dict, second: dict, second_path) -> None:
    """Refuse, naming `second_path`, a record whose task, queries or protocol are not the first's."""
    if first["task"] != second["task"]:
        raise ClipevalError(f"{second_path}: task {second['task']} cannot be compared with {first['task']}")
    pairing_of(first["task"]).check_pairable(first, second, second_path)


def stacked_samples(records: list[dict], paths) -> tuple[dict, list]:
    """(samples holding every model's columns side by side, each model's statistic over them), for ranks
    records of one dataset; a record whose queries differ from the first's is refused, naming its path."""
    first = records[0]
    for record, path in zip(records[1:], paths[1:]):
        check_pairable(first, record, path)
    return pairing_of(first["task"]).stacked_samples(records)


def compare_models(names, first: dict, second: dict, second_path, replicates=0, seed=0) -> dict:
    """Every metric of names[0] minus names[1], with its paired 95% interval when replicates > 0."""
    samples, statistics = stacked_samples([first, second], [None, second_path])
    return _comparisons(names, [first, second], samples, statistics, [(0, 1)], replicates, seed)[0]


def _comparisons(names, records, samples, statistics, pairs, replicates, seed) -> list[dict]:
    """The comparison of each (i, j) of `pairs`, from the stacked samples of every model's records. Each model's
    metrics are computed once per replicate: the replicates draw the same queries for every pair (the draws
    depend on the samples' shapes and the seed alone), so a pair's differences are its two models' values
    subtracted, replicate by replicate, the numbers a replicate of that pair alone gives."""
    first = records[0]
    compared = sorted({model for pair in pairs for model in pair})
    values = {model: statistics[model](samples) for model in compared}
    draws = {}
    if replicates:
        drawn = replicate_draws([statistics[model] for model in compared], samples, replicates, seed)
        draws = dict(zip(compared, drawn))
    results = []
    for i, j in pairs:
        result = {
            "task": first["task"],
            **{key: first[key] for key in TASKS[first["task"]].settings},
            "models": [names[i], names[j]],
            "difference": difference(values[i], values[j]),
            "values": {names[i]: values[i], names[j]: values[j]},
            "bootstrap": bootstrap_record(replicates, seed) if replicates else None,
        }
        if replicates:
            result["intervals"] = intervals_of_draws(difference_of_draws(draws[i], draws[j]))
        results.append(result)
    return results


def comparison_pairs(names, baseline=None) -> list[tuple[int, int]]:
    """Index pairs (first, second) to compare: every two models in order, or each other model against `baseline`."""
    if baseline is None:
        return [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    if baseline not in names:
        raise ClipevalError(f"baseline {baseline!r} is not among the compared models ({', '.join(names)})")
    base = names.index(baseline)
    return [(i, base) for i in range(len(names)) if i != base]


def compare_all(names, paths, baseline=None, replicates=0, seed=0) -> list[dict]:
    """compare_models for each pair of comparison_pairs, reading each ranks record once."""
    if len(names) != len(paths):
        raise ClipevalError(f"{len(names)} model names for {len(paths)} ranks records")
    if len(set(names)) != len(names):
        raise ClipevalError(f"a model is named twice: {', '.join(names)}")
    records = [read_ranks_record(path) for path in paths]
    # Every record against the first, so an error names the file that differs, whatever the pairs.
    samples, statistics = stacked_samples(records, paths)
    pairs = comparison_pairs(list(names), baseline)
    return _comparisons(list(names), records, samples, statistics, pairs, replicates, seed)
