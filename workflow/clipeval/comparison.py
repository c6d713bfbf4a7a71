"""Paired comparisons of models on one dataset.

Both models' per-query ranks (the ranks records the score stages write) are
resampled together, so each replicate's difference comes from the same
queries: the interval of a difference is much tighter than the two
models' separate intervals suggest.
"""

import numpy as np

from clipeval.classification.metrics import (
    class_samples,
    classification_statistic,
    group_columns,
    predicted_column,
)
from clipeval.classification.multilabel import multilabel_samples, multilabel_statistic
from clipeval.compositionality.metrics import compositionality_statistic, group_samples
from clipeval.errors import ClipevalError
from clipeval.probe.metrics import probe_samples, probe_statistic
from clipeval.retrieval.directions import DIRECTIONS
from clipeval.retrieval.metrics import rank_samples, retrieval_statistic
from clipeval.statistics.bootstrap import (
    bootstrap_record,
    difference,
    difference_of_draws,
    intervals_of_draws,
    replicate_draws,
)
from clipeval.storage.ranks_records import read_ranks_record

# A task's settings that a comparison carries as data, from its ranks records: its readers lay out their
# tables by them.
SETTINGS = {"retrieval": ("recall_at", "ranking_at")}


def _require_same(first, second, second_path, keys, what):
    for key in keys:
        if first[key] != second[key]:
            raise ClipevalError(
                f"{second_path}: its {what} differ from the first model's; a paired comparison needs the same queries"
            )


def check_pairable(first: dict, second: dict, second_path) -> None:
    """Refuse, naming `second_path`, a record whose task, queries or protocol are not the first's."""
    if first["task"] != second["task"]:
        raise ClipevalError(f"{second_path}: task {second['task']} cannot be compared with {first['task']}")
    if first["task"] == "retrieval":
        _require_same(
            first, second, second_path, ("protocol", "folds", "recall_at", "ranking_at"), "protocol, folds or K values"
        )
        for direction in DIRECTIONS:
            _require_same(
                first[direction], second[direction], second_path, ("query_ids", "folds"), f"{direction} queries"
            )
    elif first["task"] == "compositionality":
        _require_same(first, second, second_path, ("groups", "example_ids", "group_of"), "examples")
    elif first["task"] == "probe":
        _require_same(
            first, second, second_path, ("image_ids", "labels", "num_classes", "shots", "seeds"), "images or shots"
        )
    else:
        _require_same(first, second, second_path, ("image_ids", "labels", "num_classes"), "images or labels")
        if bool(first.get("multilabel")) != bool(second.get("multilabel")):
            raise ClipevalError(f"{second_path}: one record is multi-label and the other not")
        if ("groups" in first) != ("groups" in second):
            raise ClipevalError(
                f"{second_path}: one of the two records has no groups (scored before ranks records kept them):"
                " score it again"
            )
        if first.get("groups") != second.get("groups"):
            raise ClipevalError(f"{second_path}: its images' groups differ from the first model's")


def stacked_samples(records: list[dict], paths) -> tuple[dict, list]:
    """(samples holding every model's columns side by side, each model's statistic over them), for ranks
    records of one dataset; a record whose queries differ from the first's is refused, naming its path."""
    first = records[0]
    for record, path in zip(records[1:], paths[1:]):
        check_pairable(first, record, path)
    models = range(len(records))
    if first["task"] == "retrieval":
        parts = [rank_samples(record) for record in records]
        samples = {d: [np.column_stack(folds) for folds in zip(*(part[d] for part in parts))] for d in parts[0]}
        return samples, [retrieval_statistic(first["recall_at"], first["ranking_at"], i) for i in models]
    if first["task"] == "compositionality":
        parts = [group_samples(record)["examples"] for record in records]
        samples = {"examples": [np.column_stack(groups) for groups in zip(*parts)]}
        macro = first.get("macro_groups")
        return samples, [compositionality_statistic(first["groups"], i, macro) for i in models]
    if first["task"] == "probe":
        # The labels, then each model's predictions (a column per shots and seed), model after model.
        parts = [probe_samples(record)["images"][0] for record in records]
        rows = np.column_stack([parts[0], *(part[:, 1:] for part in parts[1:])])
        width = parts[0].shape[1] - 1
        shots, seeds, num_classes = first["shots"], first["seeds"], first["num_classes"]
        return {"images": [rows]}, [probe_statistic(shots, seeds, num_classes, 1 + i * width) for i in models]
    num_classes = first["num_classes"]
    if first.get("multilabel"):
        # Which classes each image holds, then each model's places of it, model after model.
        parts = [multilabel_samples(record)["images"][0] for record in records]
        rows = np.column_stack([parts[0], *(part[:, num_classes:] for part in parts[1:])])
        return {"images": [rows]}, [multilabel_statistic(num_classes, i) for i in models]
    # (rank, label, groups …, predicted class) of the first model, then each other model's rank and predicted
    # class after them; the macro F1 only where every record has its predicted classes.
    with_predicted = all("predicted" in record for record in records)
    own_record = first if with_predicted else {key: value for key, value in first.items() if key != "predicted"}
    own = class_samples(own_record)["images"][0]
    fields = ("ranks", "predicted") if with_predicted else ("ranks",)
    rows = np.column_stack([own, *(record[field] for record in records[1:] for field in fields)])
    columns = group_columns(first)
    ranks = [0, *range(own.shape[1], rows.shape[1], len(fields))]
    predicted = [predicted_column(first), *range(own.shape[1] + 1, rows.shape[1], len(fields))]
    return {"images": [rows]}, [
        classification_statistic(num_classes, ranks[i], 1, columns, predicted[i] if with_predicted else None)
        for i in models
    ]


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
            **{key: first[key] for key in SETTINGS.get(first["task"], ())},
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
