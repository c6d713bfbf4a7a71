"""`clipeval follow` beside a training run, through the real Snakemake: a writer process lands checkpoints slowly,
in parts, one of them cut short and removed; each whole checkpoint is evaluated once, the series' table and
TensorBoard events grow by step, and a follow killed mid-run leaves a folder the next one resumes in, paying
only for the new checkpoint."""

import csv
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from snakemake_runner import copy_workflow, planned_jobs
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(4)]

CONFIG = {
    "experiment": "follow",
    "datasets": {"shapes-test": {"format": "shapes", "task": "retrieval", "num_images": 40, "seed": 1}},
    "models": {"run": {"arch": "clipeval-tiny", "checkpoints": "training/run/epoch_*.pt"}},
    "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
    "metrics": {"bootstrap": 50},
}

# Checkpoints of random clipeval-tiny weights written in place, as torch.save does, in parts with pauses.
WRITING = r"""
import io, sys, time
from pathlib import Path

import open_clip
import torch

import clipeval.models.open_clip_models  # noqa: F401  registers clipeval-tiny

folder = Path(sys.argv[1])
folder.mkdir(parents=True, exist_ok=True)


def checkpoint(seed):
    torch.manual_seed(seed)
    buffer = io.BytesIO()
    torch.save({"epoch": seed, "state_dict": open_clip.create_model("clipeval-tiny").state_dict()}, buffer)
    return buffer.getvalue()


def write_in_parts(name, data, parts, pause):
    with open(folder / name, "wb") as handle:
        for index in range(parts):
            handle.write(data[index * len(data) // parts : (index + 1) * len(data) // parts])
            handle.flush()
            if index < parts - 1:
                time.sleep(pause)
"""
# A training run as the follow sees it: epoch 1 whole, epoch 2 in two parts three seconds apart, epoch 9 cut
# short and removed (a crashed save), epoch 3 in three parts.
TRAINING = (
    WRITING
    + """
write_in_parts("epoch_1.pt", checkpoint(1), 1, 0)
write_in_parts("epoch_2.pt", checkpoint(2), 2, 3)
cut = checkpoint(9)
(folder / "epoch_9.pt").write_bytes(cut[: len(cut) // 2])
time.sleep(3)
(folder / "epoch_9.pt").unlink()
write_in_parts("epoch_3.pt", checkpoint(3), 3, 2)
"""
)


def environment(workdir):
    return {**os.environ, "PYTHONPATH": str(workdir / "workflow"), "PYTHONUNBUFFERED": "1"}


def follow(workdir, *options):
    command = [sys.executable, "-m", "clipeval", "follow", "config/follow.yaml", "--cores", "4", *options]
    return subprocess.Popen(
        command, cwd=workdir, env=environment(workdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def series_steps(workdir):
    with open(workdir / "results/experiments/follow/series.csv") as handle:
        return [int(row["step"]) for row in csv.DictReader(handle)]


def last_run_jobs(workdir, rule):
    """How many `rule` jobs the follow's last Snakemake run started, from its log."""
    runs = (workdir / "logs/follow/follow.log").read_text().split("\n$ ")
    return runs[-1].count(f"rule {rule}:")


def test_a_follow_evaluates_each_whole_checkpoint_once_as_it_lands_and_resumes_after_a_kill(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    (workdir / "config/follow.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    writer = subprocess.Popen([sys.executable, "-c", TRAINING, "training/run"], cwd=workdir, env=environment(workdir))
    follower = follow(workdir, "--poll", "0.5", "--settle", "2", "--last-step", "3")
    output, _ = follower.communicate(timeout=600)
    assert writer.wait(timeout=60) == 0
    assert follower.returncode == 0, output[-4000:]
    lines = output.splitlines()
    evaluated = [line.split(" (step")[0] for line in lines if line.startswith("evaluated ")]
    assert evaluated == ["evaluated run.epoch_1", "evaluated run.epoch_2", "evaluated run.epoch_3"], output
    assert not [line for line in lines if "epoch_9" in line or "failed" in line], output
    assert lines[-1] == ("every series reached step 3; 3 checkpoints evaluated, results in results/experiments/follow")
    headline = next(line for line in lines if line.startswith("evaluated run.epoch_3"))
    assert headline.startswith("evaluated run.epoch_3 (step 3): shapes-test mean recall ")
    assert series_steps(workdir) == [1, 2, 3]
    events = EventAccumulator(str(workdir / "results/experiments/follow/tensorboard/run"))
    events.Reload()
    assert [event.step for event in events.Scalars("shapes-test/mean_recall")] == [1, 2, 3]
    # What the follow ran is what a plain run of the whole series runs: nothing is left to do.
    assert planned_jobs(workdir, "--configfile", "config/follow.yaml") == {}

    # A follow killed while it evaluates a new checkpoint stops its Snakemake run, which frees the lock;
    # the next follow evaluates that checkpoint, and only its jobs run.
    fourth = WRITING + 'write_in_parts("epoch_4.pt", checkpoint(4), 1, 0)\n'
    subprocess.run([sys.executable, "-c", fourth, "training/run"], cwd=workdir, env=environment(workdir), check=True)
    killed = follow(workdir, "--poll", "0.5", "--settle", "0")
    for line in killed.stdout:
        if line.startswith("evaluating run.epoch_1, run.epoch_2, run.epoch_3, run.epoch_4"):
            break
    time.sleep(5)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    locks = workdir / ".snakemake/locks"
    deadline = time.monotonic() + 120
    while locks.is_dir() and any(locks.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not (locks.is_dir() and any(locks.iterdir())), "the killed follow's Snakemake kept its lock"

    resumed = follow(workdir, "--once", "--settle", "0")
    output, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, output[-4000:]
    assert output.splitlines()[-1] == (
        "evaluated every checkpoint that was ready; 4 checkpoints evaluated, results in results/experiments/follow"
    )
    assert series_steps(workdir) == [1, 2, 3, 4]
    assert last_run_jobs(workdir, "describe_model") <= 1 and last_run_jobs(workdir, "extract_text_features") <= 1
