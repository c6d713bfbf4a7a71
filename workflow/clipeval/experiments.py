"""Experiments side by side in one results/ folder.

Each experiment (a config with a name) keeps its own summary and comparisons
under results/experiments/NAME/, beside a record of what it defines:
experiment.json. Datasets, models, features, predictions and scores are
stored by model and dataset name and shared between experiments, so an
identical definition is computed once. A name that another experiment
defines otherwise would overwrite that experiment's results; these checks
find it before anything runs. The record's format is in docs/ARCHITECTURE.md.
"""

import csv
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.metric_catalog import MAIN_METRIC
from clipeval.storage.jsonl import read_json

EXPERIMENTS_DIR = "experiments"
RECORD_NAME = "experiment.json"
# A record's sections whose entries own shared results: datasets and models by
# name, scores by "MODEL on DATASET".
SHARED_SECTIONS = ("datasets", "models", "scores")
SHOWN_DIFFERENCES = 3


def experiment_dir(results: Path, name: str) -> Path:
    return Path(results) / EXPERIMENTS_DIR / name


def record_path(results: Path, name: str) -> Path:
    return experiment_dir(results, name) / RECORD_NAME


def read_record(path: Path) -> dict:
    record = read_json(path)
    missing = [key for key in ("experiment", "config_files", *SHARED_SECTIONS) if key not in record]
    if missing:
        raise ClipevalError(f"{path}: not an experiment record (no {', '.join(missing)})")
    wrong = [key for key in SHARED_SECTIONS if not isinstance(record[key], dict)]
    if wrong or not isinstance(record["config_files"], list):
        raise ClipevalError(
            f"{path}: not an experiment record ({', '.join(wrong) or 'config_files'} of the wrong type)"
        )
    if record["experiment"] != path.parent.name:
        raise ClipevalError(f"{path}: records experiment {record['experiment']!r}, not {path.parent.name!r}")
    for pair in record["scores"]:
        dataset = pair.partition(" on ")[2]
        entry = record["datasets"].get(dataset)
        if not isinstance(entry, dict) or entry.get("task") not in MAIN_METRIC:
            raise ClipevalError(f"{path}: scores {pair!r}, but its datasets do not define {dataset!r} as evaluated")
    return record


def other_records(results: Path, name: str) -> list[tuple[Path, dict]]:
    """Every other experiment's (record path, record), by name."""
    paths = sorted(Path(results).glob(f"{EXPERIMENTS_DIR}/*/{RECORD_NAME}"))
    return [(path, read_record(path)) for path in paths if path.parent.name != name]


def flatten(value, prefix="") -> dict:
    """{"train.epochs": 12, …}: nested mappings as dotted keys; other values as they are."""
    if not isinstance(value, dict):
        return {prefix: value}
    flat = {}
    for key, item in value.items():
        flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def differences(ours, theirs) -> list[tuple[str, object, object]]:
    """(dotted key, our value, their value) for each key where they differ, in key order."""
    ours, theirs = flatten(ours), flatten(theirs)
    missing = object()
    found = []
    for key in sorted(set(ours) | set(theirs)):
        mine, other = ours.get(key, missing), theirs.get(key, missing)
        if mine != other:
            found.append((key, "unset" if mine is missing else mine, "unset" if other is missing else other))
    return found


def describe_differences(found) -> str:
    shown = [f"{key or 'the entry'}: {mine!r} here, {other!r} there" for key, mine, other in found[:SHOWN_DIFFERENCES]]
    if len(found) > SHOWN_DIFFERENCES:
        shown.append(f"and {len(found) - SHOWN_DIFFERENCES} more")
    return "; ".join(shown)


def name_conflict(ours: dict, theirs: dict, their_path: Path) -> str | None:
    """A config error for the first dataset, model or scored pair that the other experiment defines otherwise."""
    other = theirs["experiment"]
    remedy = f"rename it in this config, or delete {their_path.parent} if that experiment is done with"
    for section in ("datasets", "models"):
        for name, entry in ours[section].items():
            if name in theirs[section] and entry != theirs[section][name]:
                found = describe_differences(differences(entry, theirs[section][name]))
                return (
                    f"{section}.{name}: experiment {other!r} ({their_path}) defines it otherwise ({found});"
                    f" both would write its results: {remedy}"
                )
    for pair, settings in ours["scores"].items():
        if pair in theirs["scores"] and settings != theirs["scores"][pair]:
            found = differences(settings, theirs["scores"][pair])
            return (
                f"{found[0][0]}: experiment {other!r} ({their_path}) scores {pair} with other settings"
                f" ({describe_differences(found)}); both would write its scores: give the model another"
                " name in one of them"
            )
    return None


def experiment_conflict(record: dict, results: Path) -> str | None:
    """Why this experiment cannot run beside the others in `results`, or None.

    Its own earlier record is not a conflict (a changed definition re-runs
    what depends on it), unless it came from other config files: then two
    configs share one name and would overwrite each other's summary.
    """
    own = record_path(results, record["experiment"])
    if own.is_file():
        earlier = read_record(own)
        if earlier["config_files"] != record["config_files"]:
            return (
                f"experiment: {record['experiment']!r} is the experiment of {', '.join(earlier['config_files'])}"
                f" ({own}): give this config another name (experiment: NAME), or delete {own.parent}"
            )
    for path, theirs in other_records(results, record["experiment"]):
        found = name_conflict(record, theirs, path)
        if found:
            return found
    return None


def summary_rows(path: Path) -> dict:
    """{(model, dataset): row} of an experiment's summary.csv."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if rows and not {"model", "dataset"} <= rows[0].keys():
        raise ClipevalError(f"{path}: not a clipeval summary (no model and dataset columns)")
    return {(row["model"], row["dataset"]): row for row in rows}


def listing(results: Path) -> list[dict]:
    """One row per experiment and scored pair, by name: its headline metric from the experiment's summary, if any."""
    rows = []
    for path in sorted(Path(results).glob(f"{EXPERIMENTS_DIR}/*/{RECORD_NAME}")):
        record = read_record(path)
        summary = path.parent / "summary.csv"
        scored = summary_rows(summary) if summary.is_file() else {}
        for pair in sorted(record["scores"]):
            model, _, dataset = pair.partition(" on ")
            row = scored.get((model, dataset))
            task = record["datasets"][dataset]["task"]
            rows.append(
                {
                    "experiment": record["experiment"],
                    "model": model,
                    "dataset": dataset,
                    "task": task,
                    "metric": MAIN_METRIC[task],
                    "value": _shown(row.get(MAIN_METRIC[task], "")) if row else "not run",
                    "summary": str(summary) if row else "",
                }
            )
    return rows


def _shown(value: str) -> str:
    try:
        return f"{float(value):.2f}"
    except ValueError:
        return value or "n/a"
