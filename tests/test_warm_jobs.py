"""The tests' warm job runner (warm_jobs.py) runs a job as a new interpreter would, or hands it to one."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from snakemake_runner import RUN_SETTINGS
from warm_jobs import THREAD_VARIABLES, WarmJobs

# Its servers import torch and the plotting libraries before the first test: make test-fast leaves it out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(the `python` of servers of their own, the file they log each job to, their WarmJobs)."""
    log = tmp_path_factory.mktemp("warm-jobs") / "jobs.log"
    log.touch()
    os.environ["CLIPEVAL_WARM_JOBS_LOG"] = str(log)  # read by the servers when they start
    runner = WarmJobs(servers=(("plain", 1), ("torch", 1)))  # the kinds these tests' jobs ask for
    try:
        yield runner.python(), log, runner
    finally:
        del os.environ["CLIPEVAL_WARM_JOBS_LOG"]
        runner.close()


def new_log_lines(log, before):
    return log.read_text().splitlines()[before:]


def job_environment(threads=1, **overrides):
    """The environment of a job that Snakemake gives `threads` threads."""
    return {**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(threads)), **overrides}


def run_job(python, *args, cwd, env):
    return subprocess.run([python, "-m", "clipeval", *map(str, args)], cwd=cwd, env=env, capture_output=True)


def test_a_warm_job_writes_the_bytes_and_messages_of_a_new_interpreter(servers, tmp_path):
    python, log, _ = servers
    before = len(log.read_text().splitlines())
    prepare = ("prepare", "shapes", "--num-images", 6, "--seed", 3, "--out")
    warm = run_job(python, *prepare, "warm", cwd=tmp_path, env=job_environment())
    cold = run_job(python, *prepare, "cold", cwd=tmp_path, env=job_environment(PYTHONHASHSEED="0"))
    assert warm.returncode == cold.returncode == 0, warm.stderr + cold.stderr
    for name in ("texts.jsonl", "meta.json", "images.lmdb/data.mdb"):
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "cold" / name).read_bytes()

    # refused by the command, and by its argument parser (whose usage line names the program)
    for count, status in ((0, 1), ("many", 2)):
        refused = ("prepare", "shapes", "--num-images", count, "--seed", 3, "--out", "refused")
        warm = run_job(python, *refused, cwd=tmp_path, env=job_environment())
        cold = run_job(python, *refused, cwd=tmp_path, env=job_environment(PYTHONHASHSEED="0"))
        assert warm.returncode == status, warm.stderr
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert new_log_lines(log, before) == ["warm prepare", "cold prepare PYTHONHASHSEED"] * 3


def test_the_jobs_of_the_suite_s_snakemake_runs_fork(servers, tmp_path):
    """snakemake_runner sets RUN_SETTINGS for every run it starts; its jobs still run in the servers."""
    python, log, _ = servers
    before = len(log.read_text().splitlines())
    job = run_job(python, "prepare", "shapes", "--num-images", 2, "--seed", 1, "--out", "out", cwd=tmp_path,
                  env=job_environment(**RUN_SETTINGS))  # fmt: skip
    assert job.returncode == 0, job.stderr
    assert new_log_lines(log, before) == ["warm prepare"]


def test_native_numerics_and_other_programs_get_a_new_interpreter(servers, tmp_path):
    python, log, _ = servers
    before = len(log.read_text().splitlines())
    native = run_job(python, "describe-model", "--numerics", "native", "--help", cwd=tmp_path, env=job_environment())
    assert native.returncode == 0, native.stderr
    other = subprocess.run([python, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
    assert Path(other.stdout.strip()).name.startswith("python") and other.stdout.strip() != python
    assert new_log_lines(log, before) == ["cold describe-model --numerics"]


def test_killing_the_job_ends_its_fork(servers, tmp_path):
    python, log, runner = servers
    before = len(log.read_text().splitlines())
    prepare = ["prepare", "shapes", "--num-images", "1000000", "--seed", "1", "--out", tmp_path / "big"]
    earlier = runner.running_forks()  # an earlier test's fork may not be reaped yet
    job = subprocess.Popen(
        [python, "-m", "clipeval", *prepare],
        env=job_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not runner.running_forks() - earlier:
        assert time.monotonic() < deadline, "no fork ran the job"
        time.sleep(0.05)
    assert job.poll() is None, "the job ended before it could be killed"
    job.send_signal(signal.SIGKILL)
    job.wait()
    deadline = time.monotonic() + 10
    while runner.running_forks() - earlier:
        assert time.monotonic() < deadline, "the job's fork outlived the job"
        time.sleep(0.05)
    assert new_log_lines(log, before) == ["warm prepare"]
