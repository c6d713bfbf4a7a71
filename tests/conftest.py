import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]

# The suite runs two workers, each starting jobs that compute with two
# threads, on as few as two cores. OpenMP threads that wait actively for the
# rest of their team then spin on cores that the other worker's threads need;
# benchmarks/shared_machine.py shows the cost. Every job sets it too
# (numerics.pin); the tests' own imports of torch need it here. How threads
# wait changes no result.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The suite runs offline with a Hugging Face cache of its own, empty but for what a test writes into it (the
# stand-ins of tests/hub_standins.py): no test reads or fills the user's cache, or waits on the network. Set
# before anything imports huggingface_hub, and inherited by every Snakemake run and job, warm ones included.
HF_HOME = Path(tempfile.mkdtemp(prefix="clipeval-tests-hf-"))
atexit.register(shutil.rmtree, HF_HOME, ignore_errors=True)
os.environ.update(HF_HOME=str(HF_HOME), HF_HUB_CACHE=str(HF_HOME / "hub"), HF_HUB_OFFLINE="1")

# Property tests draw the same examples on every machine and every run: a
# failure is then the code's, reproducible anywhere, never a lucky draw.
settings.register_profile("clipeval", derandomize=True, database=None)
settings.load_profile("clipeval")


# pytest-xdist hands whole files to its workers in collection order
# (pyproject.toml turns off its own reordering, which sorts files by their
# number of tests). Each long file says about how many minutes its tests take
# in a full run (`pytestmark = pytest.mark.minutes(N)`, beside its tier's
# mark), and the longest go first, so that the short files fill in and the
# workers end together. A file whose tests wait on another's session fixture
# (test_workflow_reruns.py on the default experiment) counts only its own
# minutes, so it starts once the long files have started rather than holding
# a worker idle while that fixture builds.
def suite_minutes(item):
    mark = item.get_closest_marker("minutes")
    return mark.args[0] if mark else 0


def pytest_collection_modifyitems(items):
    longest = {}
    for item in items:
        longest[item.path] = max(longest.get(item.path, 0), suite_minutes(item))
    items.sort(key=lambda item: -longest[item.path])  # stable: a file's tests stay together and in order


# `make test-fast` runs the tests marked neither of these: whole workflows (Snakemake, the cluster, emulated
# CPUs, a reader's 300 mutated files) are `workflow`; new processes, training or over a second a test `slow`.
SLOW_TIERS = ("workflow", "slow")
_running = {}


def pytest_runtest_setup(item):
    _running["item"] = item  # session fixtures build inside the setup of the first test that asks for them


def tier_error(nodeid, marks, what):
    """Why a test marked `marks` may not do `what` (a Snakemake run), or None where its tier allows it."""
    if any(mark in SLOW_TIERS for mark in marks):
        return None
    return f"{nodeid} {what}, which `make test-fast` must not: mark it (pytestmark = pytest.mark.workflow)"


def require_slow_tier(what):
    """Fail the running test where `make test-fast` would run it and it does `what`."""
    item = _running.get("item")
    if item is not None:
        error = tier_error(item.nodeid, {mark.name for mark in item.iter_markers()}, what)
        if error:
            pytest.fail(error, pytrace=False)


# Linux starts a child's peak memory (ru_maxrss) at its parent's: exec keeps
# the peak of the memory image it replaces. A child of the test process, which
# holds torch and datasets, would report the test's peak, so a small launcher
# runs the command and writes the command's own peak, in bytes, to a file.
_PEAK_LAUNCHER = """import os, subprocess, sys
process = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(process.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measuring_peak_memory(command, report):
    """(CompletedProcess of `command`, its peak resident memory in bytes); `report` is a scratch file."""
    result = subprocess.run(
        [sys.executable, "-c", _PEAK_LAUNCHER, str(report), *map(str, command)], capture_output=True, text=True
    )
    return result, int(open(report).read())


def collected(batches):
    """(ids, matrix) of the (ids, matrix) batches that extraction's iter_image_features/iter_text_features yield."""
    import numpy as np

    parts = list(batches)
    return np.concatenate([ids for ids, _ in parts]), np.concatenate([matrix for _, matrix in parts])


# Longer than any command of the suite takes on two cores; a command that runs past it is stopped and fails its test.
COMMAND_SECONDS = 900


def run_cli(*args, cwd=None, timeout=COMMAND_SECONDS):
    """Run `python -m clipeval ARGS` as a user would; return the CompletedProcess. A command still running after
    `timeout` seconds fails the test with where each of its threads was (faulthandler, on SIGABRT), so that a
    hang (a GPU stream or a reader thread that never returns) shows where it is instead of holding the suite.
    Nor does the test wait on a process that no signal ends (one stuck in a driver): it fails, naming it."""
    command = [sys.executable, "-m", "clipeval", *map(str, args)]
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    try:
        stdout, stderr = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.send_signal(signal.SIGABRT)
        stderr = _output_within(job, HUNG_GRACE_SECONDS)
        if stderr is None:
            job.kill()
            stderr = _output_within(job, HUNG_GRACE_SECONDS)
        if stderr is None:
            pytest.fail(f"clipeval {args[0]} still ran after {timeout} s, and SIGKILL did not end it (pid {job.pid})")
        pytest.fail(f"clipeval {args[0]} still ran after {timeout} s; its threads:\n{stderr[-6000:]}")
    return subprocess.CompletedProcess(command, job.returncode, stdout, stderr)


# How long a hung command gets to print its threads after SIGABRT, and to end after SIGKILL.
HUNG_GRACE_SECONDS = 20


def _output_within(job, seconds):
    """The standard error of a job told to stop, once it ended within `seconds`; else None."""
    try:
        return job.communicate(timeout=seconds)[1]
    except subprocess.TimeoutExpired:
        return None


def extract_with_tiny(checkpoint, *options, timeout=COMMAND_SECONDS):
    """`clipeval extract-features` of clipeval-tiny with these weights and options, as a user would run it."""
    return run_cli("extract-features", "--arch", "clipeval-tiny", "--pretrained", checkpoint, *options, timeout=timeout)


@pytest.fixture(scope="session")
def shapes_dataset(tmp_path_factory):
    """A small prepared shapes dataset: 40 images, 200 captions."""
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources import PreparedSource
    from clipeval.data.sources.shapes import generate_shapes

    out = tmp_path_factory.mktemp("shapes") / "small"
    images, captions, _ = generate_shapes(40, seed=5, first_image_id=10)
    write_dataset(out, PreparedSource(images, captions, {"format": "shapes"}))
    return out


@dataclass(frozen=True)
class FinishedExperiment:
    workdir: Path
    digests: dict  # once_per_session.result_digests as the run left them, before any test added files


@pytest.fixture(scope="session")
def default_experiment(tmp_path_factory):
    """`snakemake --cores all` on the default config, as `make run` does, run once for the whole session
    (once_per_session.py): tests/test_workflow.py, test_report_browser.py and test_workflow_reruns.py check it."""
    from once_per_session import build_once, result_digests, shared_directory
    from snakemake_runner import copy_workflow, snakemake

    def run(directory):
        workdir = copy_workflow(directory / "experiment")
        result = snakemake(workdir, "--cores", "all")
        assert result.returncode == 0, result.stderr[-3000:]
        (directory / "digests.json").write_text(json.dumps(result_digests(workdir)))

    directory = build_once(shared_directory(tmp_path_factory), "default-experiment", run)
    return FinishedExperiment(directory / "experiment", json.loads((directory / "digests.json").read_text()))


@dataclass(frozen=True)
class SharedSmallExperiment:
    workdir: Path
    digests: dict  # once_per_session.result_digests as the run left them
    ran: dict  # {rule: jobs} of the run
    output_cache: dict  # the environment that points Snakemake's --cache at the cache the run filled


@pytest.fixture(scope="session")
def small_experiment_run(tmp_path_factory):
    """snakemake_runner.SMALL_CONFIG run once for the session (all workers), with Snakemake's between-workflow
    cache on and the workflow's own warm jobs (clipeval/warm_jobs/), from a shell whose activated venv exports
    PS1: tests/test_caching.py re-runs copies of it, tests/test_slurm.py compares a cluster run, whose jobs each
    start an interpreter, with it."""
    from once_per_session import build_once, result_digests, shared_directory
    from snakemake_runner import run_jobs, small_experiment

    def run(directory):
        cache = directory / "output-cache"
        cache.mkdir(parents=True)
        workdir = small_experiment(directory / "experiment")
        ran = run_jobs(
            workdir,
            "--cache",
            env={"SNAKEMAKE_OUTPUT_CACHE": str(cache), "CLIPEVAL_WARM_JOBS": "1", "PS1": "(.venv) $ "},
        )
        (directory / "run.json").write_text(json.dumps({"ran": ran, "digests": result_digests(workdir)}))

    directory = build_once(shared_directory(tmp_path_factory), "small-experiment", run)
    recorded = json.loads((directory / "run.json").read_text())
    return SharedSmallExperiment(
        directory / "experiment",
        recorded["digests"],
        recorded["ran"],
        {"SNAKEMAKE_OUTPUT_CACHE": str(directory / "output-cache")},
    )


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """A randomly initialised clipeval-tiny checkpoint in open_clip's format."""
    import open_clip
    import torch

    import clipeval.models.open_clip_models  # noqa: F401  registers clipeval-tiny

    torch.manual_seed(0)
    model = open_clip.create_model("clipeval-tiny")
    path = tmp_path_factory.mktemp("weights") / "tiny.pt"
    torch.save({"state_dict": model.state_dict()}, path)
    return path
