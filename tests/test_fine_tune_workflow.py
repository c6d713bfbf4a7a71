"""A fine-tune through the real Snakemake: a model whose `train:` starts from a checkpoint and evaluates every
epoch is a series of one-epoch jobs, each resuming from the state the one before left, evaluated as any series
is; its last epoch is the bytes of the same training run at once by the command a user would type."""

import csv

import pytest
import yaml
from conftest import run_cli
from snakemake_runner import copy_workflow, planned_jobs, run_jobs, shared_path
from test_series_workflow import write_checkpoint

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(2)]

TRAIN = {
    "dataset": "shapes-train",
    "from": "start/tiny.pt",
    "epochs": 3,
    "batch_size": 16,
    "lr": 0.0005,
    "seed": 7,
    "warmup": 2,
    "weight_decay": 0.05,
    "freeze": ["text"],
    "every_epoch": True,
}
CONFIG = {
    "experiment": "tune",
    "datasets": {
        "shapes-train": {"format": "shapes", "task": "train", "num_images": 48, "seed": 3},
        "shapes-test": {"format": "shapes", "task": "retrieval", "num_images": 40, "seed": 1},
    },
    "models": {"tuned": {"arch": "clipeval-tiny", "train": TRAIN}},
    "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
    "metrics": {"bootstrap": 50},
}


def test_a_fine_tune_evaluates_each_epoch_and_its_last_is_the_bytes_of_one_training(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    write_checkpoint(workdir / "start/tiny.pt", 5)
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    planned = planned_jobs(workdir)
    assert planned["train_epoch"] == 3 and "train" not in planned
    run_jobs(workdir)

    # Each epoch's state went once the next had resumed from it, and nothing is left to do.
    assert sorted((workdir / "results/checkpoints").rglob("state.pt")) == []
    assert planned_jobs(workdir) == {}
    experiment = workdir / "results/experiments/tune"
    with open(experiment / "series.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["step"], row["model"]) for row in rows] == [(str(k), f"tuned.epoch_{k}") for k in (1, 2, 3)]
    assert (experiment / "tensorboard/tuned").is_dir()

    # The same fine-tune, at once, by hand: the third epoch's checkpoint has its bytes.
    dataset = workdir / shared_path(workdir, "dataset_meta", dataset="shapes-train")
    at_once = tmp_path / "at-once.pt"
    trained = run_cli(
        "train", "--arch", "clipeval-tiny", "--dataset", dataset.parent, "--epochs", "3", "--batch-size", "16",
        "--lr", "0.0005", "--seed", "7", "--from", workdir / "start/tiny.pt", "--warmup", "2",
        "--weight-decay", "0.05", "--freeze", "text", "--output", at_once, cwd=workdir,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-2000:]
    last = workdir / shared_path(workdir, "checkpoint", model="tuned.epoch_3")
    assert last.read_bytes() == at_once.read_bytes()

    # Another epoch count changes the schedule of every epoch: all three train again, and a fourth.
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    config["models"]["tuned"]["train"]["epochs"] = 4
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert planned_jobs(workdir)["train_epoch"] == 4
