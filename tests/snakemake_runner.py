"""Run the real Snakemake on copies of this repository's workflow."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import REPO, require_slow_tier
from sources import write_cnclip
from warm_snakemake import needs_fresh_interpreter, warm_snakemake

WORKFLOW_FILES = ("Snakefile", "config", "workflow", "envs", "profiles")
# What every run here sets: its jobs run in the suite's servers (warm_jobs.py), not in the workflow's own.
RUN_SETTINGS = {"CLIPEVAL_WARM_JOBS": "0"}
JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$", re.M)


def snakemake(workdir, *args, env=None):
    """`python -m snakemake ARGS` in `workdir`, run as warm_snakemake.py says; returns the CompletedProcess. Its
    jobs run in the suite's own warm servers (warm_jobs.py), not the workflow's, unless `env` sets
    CLIPEVAL_WARM_JOBS: those start for each run, and the suite runs Snakemake hundreds of times."""
    require_slow_tier("runs Snakemake")
    overrides = env or {}
    env = {**os.environ, **RUN_SETTINGS, **overrides}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    if needs_fresh_interpreter(overrides):
        command = [sys.executable, "-m", "snakemake", *map(str, args)]
        return subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env)
    return warm_snakemake.run(args, workdir, env)


# What Snakemake prints first when the workflow has a profile (profiles/default).
PROFILE_NOTE = "Using workflow specific profile"


def config_error_line(result):
    """The one line a config error shows: Snakemake exits with 1 and prints nothing else but its profile note."""
    output = result.stdout + result.stderr
    lines = [line for line in output.splitlines() if line and not line.startswith(PROFILE_NOTE)]
    assert result.returncode == 1 and len(lines) == 1 and lines[0].startswith("config error: "), output[-3000:]
    return lines[0]


def job_counts(output):
    """{rule: count} of the job blocks Snakemake printed."""
    counts = {}
    for rule in JOB_HEADER.findall(output):
        counts[rule] = counts.get(rule, 0) + 1
    return counts


def planned_jobs(workdir, *args, env=None):
    """{rule: count} that a dry run plans."""
    result = snakemake(workdir, "--dry-run", *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return job_counts(result.stdout + result.stderr)


# The jobs of one model's extraction of one dataset, and an experiment's report of one model on one retrieval
# dataset.
EXTRACTION = {"extract_text_features": 1, "extract_image_shard": 1, "gather_image_features": 1}
REPORT = {"report_tables": 1, "plot_retrieval": 1, "retrieval_failures": 1}


# Cores the tests' runs give Snakemake. Training, extraction and knn jobs
# reserve two threads each, so with two cores they would run one at a time;
# in the tests' small experiments such a job spends most of its seconds
# starting up (importing torch and open_clip) on one core, and two of them
# side by side finish sooner. Results do not depend on it (test_reproducibility).
JOB_CORES = "4"


def run_jobs(workdir, *args, env=None):
    """Run the workflow; return {rule: count} of the jobs it ran."""
    result = snakemake(workdir, "--cores", JOB_CORES, *args, env=env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return job_counts(result.stdout + result.stderr)


def run_as_planned(workdir, contained, env=None, added_at_run_time=None):
    """Plan, run and plan again: the plan holds each of the `contained` job sets, the run does
    exactly the plan (and the jobs a checkpoint adds once it has run, `added_at_run_time`), and
    afterwards nothing is left to do. Returns the plan."""
    planned = planned_jobs(workdir, env=env)
    assert all(planned.get(rule, 0) >= count for jobs in contained for rule, count in jobs.items()), planned
    assert run_jobs(workdir, env=env) == plus(planned, added_at_run_time or {})
    assert planned_jobs(workdir, env=env) == {}
    return planned


def plus(*job_sets):
    """{rule: count} summed over several job sets."""
    total = {}
    for jobs in job_sets:
        for rule, count in jobs.items():
            total[rule] = total.get(rule, 0) + count
    return total


# Run with the package of the workflow copy, which a test may have extended (a new source format).
SHARED_PATH_SCRIPT = """
import json, sys
import yaml
from snakemake.utils import validate
from clipeval.planning.plan import Plan, fill_metric_defaults
from clipeval.planning.series import expand_checkpoint_series
config_file, artifact, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
config = yaml.safe_load(open(config_file))
validate(config, "config/schema.yaml")
fill_metric_defaults(config)
expand_checkpoint_series(config)
print(Plan(config, [config_file]).artifact(artifact, **names))
"""


def shared_path(workdir, artifact, config_file="config/config.yaml", **names):
    """Where the workflow in `workdir` keeps a shared artifact (planning/artifacts.py) of the models and datasets
    its config names, relative to `workdir`: under the keys of their definitions, as the workflow plans them."""
    env = {**os.environ, "PYTHONPATH": str(Path(workdir) / "workflow")}
    command = [sys.executable, "-c", SHARED_PATH_SCRIPT, config_file, artifact, json.dumps(names)]
    result = subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env, check=True)
    return result.stdout.strip()


def recorded_folders(workdir, experiment="default"):
    """{datasets: {name: folder}, models: …, features: {"MODEL on DATASET": folder}}: where an experiment's shared
    artifacts are, as the record of its last successful run lists them."""
    return json.loads((Path(workdir) / f"results/experiments/{experiment}/experiment.json").read_text())["folders"]


def copy_workflow(destination):
    destination.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, destination / name)
    return destination


def copy_experiment(source, destination):
    """A finished experiment, results and Snakemake's records included, mtimes kept."""
    shutil.copytree(
        source, destination, symlinks=True, ignore=shutil.ignore_patterns("locks", "incomplete", "log", "__pycache__")
    )
    return destination


def edit_config(workdir, change):
    path = workdir / "config/config.yaml"
    config = yaml.safe_load(path.read_text())
    change(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def read_csv(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def read_summary(workdir, experiment="default"):
    return read_csv(workdir / f"results/experiments/{experiment}/summary.csv")


# A small experiment of every kind of stage: training, a shapes and a
# Chinese-CLIP dataset, one model; about a minute on two cores.
SMALL_CONFIG = {
    "experiment": "small",
    "datasets": {
        "shapes-train": {"format": "shapes", "task": "train", "num_images": 256, "seed": 0},
        "shapes-test": {
            "format": "shapes",
            "task": "retrieval",
            "num_images": 120,
            "seed": 1,
            "first_image_id": 100000,
        },
        "cn-test": {
            "format": "cnclip",
            "task": "retrieval",
            "images": "sources/cn_imgs.tsv",
            "texts": "sources/cn_texts.jsonl",
        },
    },
    "models": {
        "tiny": {
            "arch": "clipeval-tiny",
            "train": {"dataset": "shapes-train", "epochs": 1, "batch_size": 64, "lr": 0.001, "seed": 0},
        },
    },
    # On the CPU, as the default experiment: the byte comparisons hold on a GPU host too (docs/CLUSTER_AND_GPU.md, "On a GPU host").
    "extract": {"precision": "fp32", "shard_size": 0, "batch_size": 32, "num_workers": 0, "device": "cpu"},
    "knn": {"top_k": 10, "device": "auto"},
    "metrics": {"recall_at": [1, 5, 10], "allow_queries_without_positive": False},
}


def small_experiment(directory):
    copy_workflow(directory)
    write_cnclip(directory / "sources")
    edit_config(directory, lambda config: (config.clear(), config.update(json.loads(json.dumps(SMALL_CONFIG)))))
    return directory
