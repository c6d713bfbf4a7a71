"""Experiments side by side in one results/ folder.

Each experiment (a config with a name) keeps what depends on its settings
(scores, comparisons, summary, report) under results/experiments/NAME/,
beside a record of what it defines: experiment.json, written when a run of
it succeeds. Datasets, models, features and predictions are shared, stored
under the key of their definition (planning/keys.py), so experiments never
overwrite each other's. A name belongs to the config files whose successful
run recorded it; another config with that name writes NAME-2 (or -3 …)
unless it says `replace: true`. The record's format is in
docs/ARCHITECTURE.md.
"""

import csv
import itertools
import os
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_json
from clipeval.tasks import TASKS, main_metric

EXPERIMENTS_DIR = "experiments"
RECORD_NAME = "experiment.json"
RECORD_SECTIONS = ("datasets", "models", "scores")


def experiment_dir(results: Path, name: str) -> Path:
    return Path(results) / EXPERIMENTS_DIR / name


def record_path(results: Path, name: str) -> Path:
    return experiment_dir(results, name) / RECORD_NAME


def read_record(path: Path) -> dict:
    record = read_json(path)
    missing = [key for key in ("experiment", "config_files", *RECORD_SECTIONS) if key not in record]
    if missing:
        raise ClipevalError(f"{path}: not an experiment record (no {', '.join(missing)})")
    wrong = [key for key in RECORD_SECTIONS if not isinstance(record[key], dict)]
    if wrong or not isinstance(record["config_files"], list):
        raise ClipevalError(
            f"{path}: not an experiment record ({', '.join(wrong) or 'config_files'} of the wrong type)"
        )
    if record["experiment"] != path.parent.name:
        raise ClipevalError(f"{path}: records experiment {record['experiment']!r}, not {path.parent.name!r}")
    folders = record.get("folders", {})
    if not isinstance(folders, dict) or not all(
        isinstance(named, dict) and all(isinstance(folder, str) for folder in named.values())
        for named in folders.values()
    ):
        raise ClipevalError(f"{path}: not an experiment record (folders is not a mapping of names to folders)")
    for pair in record["scores"]:
        dataset = pair.partition(" on ")[2]
        entry = record["datasets"].get(dataset)
        if not isinstance(entry, dict) or entry.get("task") not in TASKS:
            raise ClipevalError(f"{path}: scores {pair!r}, but its datasets do not define {dataset!r} as evaluated")
    return record


# The config file a run reads when none is given.
DEFAULT_CONFIG = "config/config.yaml"


def recorded_config_files(paths) -> list[str]:
    """A run's config files as its record names them (the default experiment's when none is given): absolute, as
    Snakemake hands them over, then relative to the working directory when inside it, so that copies of a
    results folder agree."""
    here = Path.cwd()
    absolute = [Path(os.path.abspath(path)) for path in paths or [DEFAULT_CONFIG]]
    return [str(path.relative_to(here) if path.is_relative_to(here) else path) for path in absolute]


def experiment_folder(name: str, config_files: list[str], results: Path, replace: bool = False) -> str:
    """The experiment a run of these config files writes: `name`, unless another config's successful run
    recorded it; then the first of NAME-2, NAME-3 … that is these files' own or free. With `replace`, `name`."""
    candidates = itertools.chain([name], (f"{name}-{number}" for number in itertools.count(2)))
    return next(candidate for candidate in candidates if replace or _free_or_own(candidate, config_files, results))


def experiment_of_configs(configs: list[Path], results: Path) -> str:
    """The experiment a run of these config files (the default one when none) writes, read without Snakemake:
    `experiment:` of the last file that gives one, else the last file's name, then as experiment_folder."""
    import yaml

    configs = [Path(path) for path in configs] or [Path(DEFAULT_CONFIG)]
    merged = {}
    for path in configs:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            raise ClipevalError(f"{path}: cannot read the config ({type(error).__name__})") from None
        merged.update(loaded if isinstance(loaded, dict) else {})
    name = merged.get("experiment") or configs[-1].stem
    return experiment_folder(name, recorded_config_files(configs), results, bool(merged.get("replace")))


def _free_or_own(name: str, config_files: list[str], results: Path) -> bool:
    path = record_path(results, name)
    return not path.is_file() or read_record(path)["config_files"] == config_files


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
            metric = main_metric(task, {column: value for column, value in (row or {}).items() if value != ""})
            rows.append(
                {
                    "experiment": record["experiment"],
                    "model": model,
                    "dataset": dataset,
                    "task": task,
                    "metric": metric,
                    "value": _shown(row.get(metric, "")) if row else "not run",
                    "summary": str(summary) if row else "",
                }
            )
    return rows


def _shown(value: str) -> str:
    try:
        return f"{float(value):.2f}"
    except ValueError:
        return value or "n/a"
