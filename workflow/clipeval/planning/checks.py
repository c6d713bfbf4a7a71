"""The checks of a config that its schema cannot express, run before any job: the names that become paths,
names that refer to other entries, knn's depth, the files and folders it names, and files dated ahead of the
clock.

Each raises ConfigError with one line naming the key or file.
"""

import os
import re
import shlex
import time
from pathlib import Path

from clipeval.data.sources import FILE, FOLDER
from clipeval.metric_catalog import has_rsum
from clipeval.models.pretrained import hub_snapshot_parent, is_checkpoint_path, parse_model_name
from clipeval.numerics import PORTABLE_THREADS, pins_training, portable_threads_error
from clipeval.planning.artifacts import RESULTS
from clipeval.planning.config_errors import location
from clipeval.planning.plan import EVALUATED_TASKS, ConfigError, Plan
from clipeval.planning.series import config_name
from clipeval.published.benchmarks import BENCHMARKS, MEAN_R1, benchmark_metric
from clipeval.tasks import TASKS

# What a dataset, model or experiment may be called: each name becomes a path
# component, a wildcard value and a word of job command lines. config/schema.yaml's
# `name` says the same; Python's `$` there also lets a trailing newline through.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# The tasks that take a train split, the tasks of the datasets that split may name, and those of the datasets
# only ever extracted as one (a probe's probe_train).
FITTED_TASKS = tuple(name for name, task in TASKS.items() if task.fitted)
TRAIN_ONLY_TASKS = {name for task in TASKS.values() for name in task.fitted_on if name not in TASKS}
GROUPED_TASKS = tuple(name for name, task in TASKS.items() if task.grouped)
NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters"


def check_names(plan: Plan) -> None:
    """Every dataset, model and experiment name fits NAME, the experiment's too when a config file's name gives it."""
    config = plan.config
    for section in ("datasets", "models"):
        for name in config[section]:
            if not NAME.fullmatch(name):
                raise ConfigError(f"{section}: {name!r} is not a usable name ({NAME_RULE})")
    name = plan.experiment_name()
    if NAME.fullmatch(name):
        return
    if "experiment" in config:
        raise ConfigError(f"experiment: {name!r} is not a usable name ({NAME_RULE})")
    raise ConfigError(
        f"{plan.config_files[-1]}: the experiment takes this file's name, {name!r}, which is not a usable name"
        f" ({NAME_RULE}); set `experiment:` in it"
    )


def check_references(plan: Plan) -> None:
    """Every name an entry gives is another entry's, of a task it can take."""
    config = plan.config

    def known(key, name, section):
        if name not in config[section]:
            raise ConfigError(f"{location(key)}: unknown {section[:-1]} {name!r} (known: {', '.join(config[section])})")

    def evaluated(key, dataset):
        known(key, dataset, "datasets")
        task = config["datasets"][dataset]["task"]
        if task not in EVALUATED_TASKS:
            raise ConfigError(f"{location(key)}: dataset {dataset!r} has task {task!r}, which is not evaluated")

    for name, entry in config["datasets"].items():
        published = entry.get("published")
        if published and BENCHMARKS[published].task != entry["task"]:
            raise ConfigError(
                f"{location(('datasets', name, 'published'))}: {published} is a {BENCHMARKS[published].task}"
                f" benchmark, and this dataset's task is {entry['task']}: its published numbers would not be this"
                " dataset's"
            )
        formats = BENCHMARKS[published].formats if published else ()
        if formats and entry["format"] not in formats:
            raise ConfigError(
                f"{location(('datasets', name, 'published'))}: {published} is read by format"
                f" {' or '.join(formats)}, not {entry['format']}: its published numbers would not be this dataset's"
            )
        metric = BENCHMARKS[published].openclip_metric if published else ""
        if metric.startswith("worst_group/") and metric.split("/")[1] not in (entry.get("groups") or []):
            raise ConfigError(
                f"{location(('datasets', name, 'published'))}: {published} is scored by its worst"
                f" {metric.split('/')[1]} group: name {metric.split('/')[1]} in the dataset's groups"
            )
        key = ("datasets", name, "train_split")
        if entry["task"] not in FITTED_TASKS:
            if "train_split" in entry:
                raise ConfigError(
                    f"{location(key)}: only a dataset of task {' or '.join(FITTED_TASKS)} names a train split"
                )
            continue
        if "train_split" not in entry:
            raise ConfigError(
                f"{location(key)}: a {entry['task']} dataset names the dataset its classifier is fitted on"
            )
        known(key, entry["train_split"], "datasets")
        task = config["datasets"][entry["train_split"]]["task"]
        fitted_on = TASKS[entry["task"]].fitted_on
        if task not in fitted_on:
            raise ConfigError(
                f"{location(key)}: dataset {entry['train_split']!r} has task {task!r}; a train split is a"
                f" {fitted_on[0]} dataset ({' or '.join(fitted_on)})"
            )
    for name, entry in config["datasets"].items():
        if "groups" in entry and entry["task"] not in GROUPED_TASKS:
            raise ConfigError(
                f"{location(('datasets', name, 'groups'))}: only a dataset of task {' or '.join(GROUPED_TASKS)} is"
                f" scored by group (this one's task is {entry['task']})"
            )
    for name, entry in config["models"].items():
        if "train" in entry:
            named = config_name(config, name)  # an epoch of a series: the series' entry
            if not parse_model_name(entry["arch"]).backend.trainable:
                raise ConfigError(
                    f"{location(('models', named, 'train'))}: clipeval trains open_clip archs only, not"
                    f" {entry['arch']!r}: give this model's weights (pretrained) instead"
                )
            known(("models", named, "train", "dataset"), entry["train"]["dataset"], "datasets")
            check_training_precision(named, entry["train"], config["numerics"])
        for dataset, files in entry.get("features", {}).items():
            if config["datasets"].get(dataset, {}).get("task") in TRAIN_ONLY_TASKS:
                continue  # a train split alone: its images are all it needs
            evaluated(("models", name, "features", dataset), dataset)
            task = config["datasets"][dataset]["task"]
            if TASKS[task].fitted and config["datasets"][dataset]["train_split"] not in entry["features"]:
                raise ConfigError(
                    f"{location(('models', name, 'features', dataset))}: a {task} dataset needs features of its"
                    f" train split {config['datasets'][dataset]['train_split']!r} too"
                )
            needed = TASKS[task].precomputed_features
            if needed not in files:
                raise ConfigError(
                    f"{location(('models', name, 'features', dataset))}: a {task} dataset needs {needed!r} features"
                )
    for suite, datasets in config.get("suites", {}).items():
        for index, dataset in enumerate(datasets):
            evaluated(("suites", suite, index), dataset)
        if not plan.suite_models(suite):
            raise ConfigError(f"suites.{suite}: no model is evaluated on every one of its datasets")
        recall_at = config["metrics"]["recall_at"]
        for dataset in datasets:
            entry = config["datasets"][dataset]
            if entry["task"] != "retrieval":
                continue
            by_mean_r1 = benchmark_metric("retrieval", entry.get("published")) == MEAN_R1
            if by_mean_r1 and 1 not in recall_at:
                raise ConfigError(
                    f"suites.{suite}: averages the mean R@1 of {dataset} (its benchmark's metric), which needs 1 in"
                    " metrics.recall_at"
                )
            if not by_mean_r1 and not has_rsum(recall_at):
                raise ConfigError(
                    f"suites.{suite}: averages the mean recall of {dataset}, which needs 1, 5 and 10 in"
                    " metrics.recall_at"
                )
    if "baseline" in config["compare"]:
        known(("compare", "baseline"), config["compare"]["baseline"], "models")
    first_listed = {}
    for index, entry in enumerate(config.get("evaluate", [])):
        pair = (entry["model"], entry["dataset"])
        if pair in first_listed:
            raise ConfigError(
                f"{location(('evaluate', index))}: model {pair[0]!r} on dataset {pair[1]!r} is listed twice"
                f" (also {location(('evaluate', first_listed[pair]))})"
            )
        first_listed[pair] = index
        known(("evaluate", index, "model"), entry["model"], "models")
        evaluated(("evaluate", index, "dataset"), entry["dataset"])
        features = config["models"][entry["model"]].get("features")
        if features is not None and entry["dataset"] not in features:
            raise ConfigError(
                f"{location(('evaluate', index))}: model {entry['model']!r} has no features for dataset"
                f" {entry['dataset']!r}"
            )


def check_knn_depth(plan: Plan) -> None:
    """knn's lists hold the largest K, wherever knn runs (retrieval under the full protocol)."""
    config = plan.config
    deepest = max(config["metrics"]["recall_at"])
    knn_runs = any(plan.checks_predictions(dataset) for _, dataset in plan.evaluation_pairs())
    if knn_runs and config["knn"]["top_k"] < deepest:
        raise ConfigError(
            f"knn.top_k: {config['knn']['top_k']} is too few: R@{deepest} needs at least {deepest} predictions"
        )


# The most paired comparisons one dataset's comparison job makes (a third of a second each, 1000 replicates):
# every pair of 100 models. 5,000 checkpoints' pairs made one job of 12.5 million.
MAX_COMPARISONS = 5_000


def check_comparisons(plan: Plan) -> None:
    """A dataset whose comparison job would compare more than MAX_COMPARISONS pairs is refused, naming the way to
    fewer: compare.baseline compares each model with one."""
    baseline = plan.config["compare"].get("baseline")
    for dataset, models in plan.compared_models().items():
        pairs = len(models) - 1 if baseline else len(models) * (len(models) - 1) // 2
        if pairs > MAX_COMPARISONS:
            raise ConfigError(
                f"compare: {len(models):,} models on {dataset} make {pairs:,} paired comparisons in one job, more than"
                f" the {MAX_COMPARISONS:,} it makes: set compare.baseline to compare each model with one"
            )


def check_training_precision(name: str, train: dict, numerics: str) -> None:
    """Half precision on the CPU computes with kernels the portable profile does not pin."""
    precision = train.get("precision", "fp32")
    if not pins_training(numerics, precision, train.get("device", "cpu")):
        raise ConfigError(
            f"{location(('models', name, 'train', 'precision'))}: {precision} on the CPU is outside numerics:"
            " portable, whose training is the same bits on every CPU: train in fp32, on a GPU (device: cuda), or"
            " under numerics: native"
        )


def check_inputs(plan: Plan) -> None:
    """Every file and folder the config names exists, before anything runs.

    Snakemake does not look at the inputs of jobs whose outputs exist: a
    mistyped path of a prepared dataset would otherwise plan nothing and exit 0.
    """
    config = plan.config
    trained = {plan.artifact("checkpoint", model=name) for name, entry in config["models"].items() if "train" in entry}
    named = [
        (("datasets", dataset, setting.key), value, kind)
        for dataset in config["datasets"]
        for kind in (FILE, FOLDER)
        for setting, value in plan.entry_settings(dataset, kind)
    ]
    model_folders = []
    for name, entry in config["models"].items():
        model = plan.model_name(name)
        if model.scheme.folder == "path":
            named.append((("models", name, "arch"), str(model.folder), FOLDER))
            model_folders.append((("models", name, "arch"), model))
        if model.scheme.folder == "hub" and model.folder is None:
            repo = model.identifier
            raise ConfigError(
                f"{location(('models', name, 'arch'))}: {repo} is not in the Hugging Face cache"
                f" ({hub_snapshot_parent(repo)}): download it first (hf download {repo}), so that its files are"
                " known before anything runs"
            )
        weights = entry.get("pretrained", "")
        if is_checkpoint_path(weights) and weights not in trained:
            named.append((("models", name, "pretrained"), weights, FILE))
        if is_checkpoint_path(entry.get("train", {}).get("from", "")):
            named.append((("models", config_name(config, name), "train", "from"), entry["train"]["from"], FILE))
        named += [
            (("models", name, "features", dataset, kind), path, FILE)
            for dataset, files in entry.get("features", {}).items()
            for kind, path in files.items()
        ]
    for key, path, kind in named:
        if not (Path(path).is_dir() if kind == FOLDER else Path(path).exists()):
            where = "" if Path(path).is_absolute() else f" (relative to {Path.cwd()}, the working directory)"
            raise ConfigError(f"{location(key)}: {'folder' if kind == FOLDER else 'file'} {path} not found{where}")
    # Before any folder is read for its digest: `local-dir:/etc` had every file of /etc hashed at planning.
    for key, model in model_folders:
        marker = model.scheme.marker
        if not (model.folder / marker).is_file():
            raise ConfigError(
                f"{location(key)}: {model.folder} holds no {marker}, so it is no {model.scheme.prefix} model folder"
            )


# How far ahead of this machine's clock a file may be dated: timestamps of a
# file just written on a network file system can lead by a little.
CLOCK_TOLERANCE_NS = 2 * 10**9


def check_clock(plan: Plan, results: Path = RESULTS, now_ns: int | None = None) -> None:
    """No result or input file is dated ahead of this machine's clock.

    Snakemake compares modification times: a result dated ahead (written while
    a clock was ahead) looks newer than any later change of its inputs, and a
    job whose input is dated ahead fails once it has run. Refused before
    anything runs, naming the first such file.
    """
    limit = (time.time_ns() if now_ns is None else now_ns) + CLOCK_TOLERANCE_NS
    named_inputs = plan.model_inputs(list(plan.config["models"])) + [
        named for dataset in plan.config["datasets"] for named in plan.dataset_inputs(dataset)
    ]
    named = {path for kind, path in named_inputs if kind == FILE}
    for path in [*(Path(p) for p in sorted(named)), *_files_in_order(results)]:
        try:
            mtime = path.lstat().st_mtime_ns  # a link's own date, as Snakemake compares
        except OSError:
            continue  # a missing input is check_inputs' to name; a result may vanish meanwhile
        if mtime > limit:
            every = (
                f" (every such result: find {results} -newermt now -exec touch -c -h -d now {{}} +)"
                if path.is_relative_to(results)
                else ""
            )
            raise ConfigError(
                f"{path}: dated {_local_time(mtime)}, ahead of this machine's clock"
                f" ({_local_time(limit - CLOCK_TOLERANCE_NS)}), so a later change of its inputs would look older"
                " and re-run nothing: once the clocks agree, date it now with"
                f" touch -c -h -d now {shlex.quote(str(path))}{every}"
            )


def _files_in_order(root: Path):
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        yield from (Path(folder, name) for name in sorted(names))


def _local_time(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ns / 10**9))


def check_plan(plan: Plan) -> None:
    """Every check, in the order a user meets them: names, references, knn's depth, the comparisons, the inputs,
    the clock."""
    check_names(plan)
    check_references(plan)
    check_knn_depth(plan)
    check_comparisons(plan)
    check_inputs(plan)
    check_clock(plan)


def check_cores(numerics: str, cores: int | None) -> None:
    """A local run whose --cores are fewer than portable numerics' threads would run its torch jobs on more
    threads than it has cores, or change their numbers: refused before any job runs. `cores` is None where
    Snakemake does not schedule the jobs on its own cores (a cluster)."""
    if numerics == "portable" and cores is not None and cores < PORTABLE_THREADS:
        raise ConfigError(portable_threads_error(f"--cores {cores} grants {cores}"))
