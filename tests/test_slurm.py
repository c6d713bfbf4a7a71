"""The SLURM profile on a real single-node cluster (tests/slurm_cluster.py).

The small experiment of every kind of stage (snakemake_runner.SMALL_CONFIG:
training, a shapes and a Chinese-CLIP dataset, the report) runs through
`profiles/slurm`, interrupted by `scancel` of a running extraction shard; the
re-run finishes exactly what is missing, and the results are the bytes of
the same experiment run locally (tests/conftest.py's `small_experiment_run`,
which test_caching.py re-runs). The profile is what is tested here, so the
experiment is the smallest that runs every rule the default one submits but
encode_classes, which tests/test_workflow.py runs locally.
"""

import importlib.util
import os
import re
import subprocess
import sys
import time

import pytest
from once_per_session import result_digests
from slurm_cluster import NAMED_PARTITION, job_record, jobs_in_queue, running_cluster
from snakemake_runner import job_counts, planned_jobs, small_experiment, snakemake

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.minutes(5),
    pytest.mark.skipif(
        importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
        reason="the cluster set-up is not installed: pip install snakemake-executor-plugin-slurm",
    ),
]

# What only this test cluster needs: it has no accounting database (job states
# from squeue, no account), and its jobs take seconds, so status is polled often.
TEST_CLUSTER_FLAGS = (
    "--slurm-status-command",
    "squeue",
    "--slurm-no-account",
    "--slurm-init-seconds-before-status-checks",
    "1",
)
LOCAL_RULES = {
    "all",
    "summary",
    "compare_models",
    "describe_model",
    "describe_features_model",
    "report_tables",
    "plot_retrieval",
    "plot_classification",
    "plot_comparisons",
}
GPU_RULES = {"extract_image_shard", "extract_text_features", "encode_classes"}
# The user's partition, given as the README says, without editing the profile.
USER_ENVIRONMENT = {"SBATCH_PARTITION": NAMED_PARTITION}
JOB_BLOCK = re.compile(r"^(local)?(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    jobid: (\d+)$", re.M)
SUBMITTED = re.compile(r"^Job (\d+) has been submitted with SLURM jobid (\d+)", re.M)


def cluster_command(*args):
    return [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", *TEST_CLUSTER_FLAGS, *args]


def jobs_and_submissions(output):
    """[(rule, is_local, SLURM job id or None)] for every job Snakemake started."""
    submitted = dict(SUBMITTED.findall(output))
    return [(rule, bool(local), submitted.get(jobid)) for local, rule, jobid in JOB_BLOCK.findall(output)]


def cancel_a_running_shard(process, seconds=600):
    """scancel the first extraction shard seen running; return its SLURM comment."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        for job in jobs_in_queue():
            if job["state"] == "RUNNING" and job["comment"].startswith("rule_extract_image_shard_"):
                subprocess.run(["scancel", job["id"]], check=True)
                return job["comment"]
        time.sleep(0.2)
    raise AssertionError("no extraction shard was seen running")


def assert_submitted_as_declared(runs):
    jobs = [job for output in runs for job in jobs_and_submissions(output)]
    assert jobs, "Snakemake started no jobs"
    for rule, is_local, slurm_id in jobs:
        if is_local:
            assert rule in LOCAL_RULES and slurm_id is None, (rule, slurm_id)
            continue
        assert slurm_id is not None, f"{rule} ran without a SLURM job"
        record = job_record(slurm_id)
        assert record["Comment"].startswith(f"rule_{rule}"), (rule, record["Comment"])
        assert record["Partition"] == NAMED_PARTITION, (rule, record["Partition"])
        assert ("gpu:1" in record.get("TresPerJob", "")) == (rule in GPU_RULES), (rule, record.get("TresPerJob"))
    assert {rule for rule, is_local, _ in jobs if is_local} == {
        "all",
        "summary",
        "describe_model",
        "report_tables",
        "plot_retrieval",
    }


def test_the_slurm_profile_runs_an_experiment_and_resumes_after_scancel(tmp_path, request):
    workdir = small_experiment(tmp_path / "cluster")

    with running_cluster(tmp_path / "slurm"):
        wrong = snakemake(workdir, "--profile", "profiles/slurm", *TEST_CLUSTER_FLAGS, env={"SBATCH_PARTITION": "nope"})
        assert wrong.returncode != 0
        assert "sbatch: error: invalid partition specified: nope" in wrong.stdout + wrong.stderr, wrong.stderr[-3000:]
        # Nothing computed, and no experiment recorded: a failed first run holds no name.
        assert [p.relative_to(workdir) for p in (workdir / "results").rglob("*") if p.is_file()] == []

        with open(tmp_path / "first.log", "w+") as log:
            first = subprocess.Popen(
                cluster_command("--retries", "0"),
                cwd=workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                env={**os.environ, **USER_ENVIRONMENT},
            )
            cancelled = cancel_a_running_shard(first)
            assert first.wait(timeout=900) != 0
            log.seek(0)
            first_output = log.read()
        # The job's name: its wildcards, the model's and the dataset's keys first (hex digits, no "_").
        model, dataset, size, index = cancelled.removeprefix("rule_extract_image_shard_wildcards_").split("_")
        assert not (workdir / f"results/features/{model}/{dataset}/image-shards/by-{size}/{index}.jsonl").exists()

        # The cancelled shard is left to do, and any shard the failed run had not yet started; the trained
        # checkpoint is not.
        missing = planned_jobs(workdir)
        assert missing.get("extract_image_shard", 0) >= 1 and "train" not in missing, missing
        second = snakemake(workdir, "--profile", "profiles/slurm", *TEST_CLUSTER_FLAGS, env=USER_ENVIRONMENT)
        assert second.returncode == 0, (second.stdout + second.stderr)[-4000:]
        assert job_counts(second.stdout + second.stderr) == missing
        assert_submitted_as_declared([first_output, second.stdout + second.stderr])

    # Asked for only now: the local run, started by test_caching.py in the other worker, ran meanwhile.
    local = request.getfixturevalue("small_experiment_run")
    cluster = result_digests(workdir)
    assert [
        path for path in sorted(cluster.keys() | local.digests.keys()) if cluster.get(path) != local.digests.get(path)
    ] == []
