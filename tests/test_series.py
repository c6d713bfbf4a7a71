"""Checkpoint series: a glob of a run's checkpoints becomes one model per file, in step order, and the summary
shows each dataset's main metric by step with the best checkpoint marked."""

import pytest

from clipeval.errors import ClipevalError
from clipeval.models.checkpoint_files import checkpoint_step
from clipeval.planning.series import SERIES_KEY, expand_checkpoint_series
from clipeval.reporting.series_table import series_markdown, series_rows


def found(*names):
    return lambda pattern: list(names)


def config_with(models, evaluate=None):
    config = {"models": models}
    if evaluate is not None:
        config["evaluate"] = evaluate
    return config


@pytest.mark.parametrize(
    "name, step",
    [("epoch_12.pt", 12), ("step-5000.pt", 5000), ("run3_epoch_7.safetensors", 7), ("model.step100.pt", 100)],
)
def test_the_step_is_the_last_number_before_the_suffix(tmp_path, name, step):
    assert checkpoint_step(tmp_path / name) == step


def test_a_series_becomes_its_members_in_step_order_in_the_series_place():
    config = config_with(
        {
            "first": {"arch": "ViT-B-32", "pretrained": "openai"},
            "run": {"arch": "ViT-B-32", "checkpoints": "ckpt/epoch_*.pt", "precision": "bf16"},
            "last": {"arch": "RN50", "pretrained": "openai"},
        },
        evaluate=[{"model": "run", "dataset": "flickr"}, {"model": "first", "dataset": "flickr"}],
    )
    expand_checkpoint_series(config, found("ckpt/epoch_10.pt", "ckpt/epoch_2.pt", "ckpt/epoch_1.pt"))
    assert list(config["models"]) == ["first", "run.epoch_1", "run.epoch_2", "run.epoch_10", "last"]
    assert config["models"]["run.epoch_10"] == {
        "arch": "ViT-B-32",
        "precision": "bf16",
        "pretrained": "ckpt/epoch_10.pt",
    }
    assert config[SERIES_KEY] == {"run": [[1, "run.epoch_1"], [2, "run.epoch_2"], [10, "run.epoch_10"]]}
    assert [entry["model"] for entry in config["evaluate"]] == ["run.epoch_1", "run.epoch_2", "run.epoch_10", "first"]


def test_a_file_in_the_working_folder_reads_as_a_path_not_a_tag():
    config = config_with({"run": {"arch": "RN50", "checkpoints": "step*"}})
    expand_checkpoint_series(config, found("step3"))
    assert config["models"]["run.step3"]["pretrained"] == "./step3"


@pytest.mark.parametrize(
    "files, message",
    [
        ((), "models.run.checkpoints: no file matches 'ckpt/*.pt' (looked from {cwd})"),
        (
            ("ckpt/epoch_1.pt", "ckpt/epoch_latest.pt"),
            "models.run.checkpoints: ckpt/epoch_latest.pt: the file's name has no step number (epoch_3.pt,"
            " step-5000.pt); narrow the pattern to the numbered files (epoch_[0-9]*.pt)",
        ),
        (
            ("ckpt/a/epoch_1.pt", "ckpt/b/step_1.pt"),
            "models.run.checkpoints: ckpt/a/epoch_1.pt and ckpt/b/step_1.pt both have step 1",
        ),
    ],
)
def test_a_glob_that_gives_no_series_is_one_line_naming_the_key(files, message):
    from pathlib import Path

    with pytest.raises(ClipevalError) as error:
        expand_checkpoint_series(config_with({"run": {"arch": "RN50", "checkpoints": "ckpt/*.pt"}}), found(*files))
    assert str(error.value) == message.format(cwd=Path.cwd())


def test_a_glob_of_more_checkpoints_than_a_series_evaluates_is_refused_before_planning():
    """5,000 matches planned 40,007 jobs in a six-minute dry run, without a word."""
    files = [f"ckpt/step_{step}.pt" for step in range(1001)]
    with pytest.raises(ClipevalError) as error:
        expand_checkpoint_series(config_with({"run": {"arch": "RN50", "checkpoints": "ckpt/*.pt"}}), found(*files))
    assert str(error.value) == (
        "models.run.checkpoints: 'ckpt/*.pt' matches 1,001 files, more than the 1,000 checkpoints a series evaluates:"
        " narrow the pattern (every tenth: epoch_*0.pt)"
    )
    expand_checkpoint_series(config_with({"run": {"arch": "RN50", "checkpoints": "ckpt/*.pt"}}), found(*files[:1000]))


def test_a_member_named_like_another_model_is_refused():
    config = config_with(
        {"run.epoch_1": {"arch": "RN50", "pretrained": "openai"}, "run": {"arch": "RN50", "checkpoints": "*"}}
    )
    with pytest.raises(ClipevalError, match=r"^models\.run\.checkpoints: its member 'run\.epoch_1' has the name of"):
        expand_checkpoint_series(config, found("ckpt/epoch_1.pt"))


def row(model, dataset, task, value, interval=None):
    metric = {"retrieval": "mean_recall", "classification": "top1"}[task]
    result = {"model": model, "dataset": dataset, "task": task, metric: value}
    if interval:
        result[f"{metric}_ci_low"], result[f"{metric}_ci_high"] = interval
    return result


def test_the_best_step_per_dataset_is_marked_the_earliest_on_a_tie():
    rows = [
        row("run.e2", "flickr", "retrieval", 50.0, (48.0, 52.0)),
        row("run.e1", "flickr", "retrieval", 40.0, (38.0, 42.0)),
        row("run.e3", "flickr", "retrieval", 45.0, (43.0, 47.0)),
        row("run.e1", "cifar", "classification", 70.0),
        row("run.e2", "cifar", "classification", 70.0),
        row("run.e3", "cifar", "classification", None),
        row("other", "flickr", "retrieval", 99.0),
    ]
    table = series_rows(rows, {"run": [(3, "run.e3"), (1, "run.e1"), (2, "run.e2")]})
    assert [(r["dataset"], r["step"], r["metric"], r["value"], r["best"]) for r in table] == [
        ("flickr", 1, "mean_recall", 40.0, False),
        ("flickr", 2, "mean_recall", 50.0, True),
        ("flickr", 3, "mean_recall", 45.0, False),
        ("cifar", 1, "top1", 70.0, True),
        ("cifar", 2, "top1", 70.0, False),
        ("cifar", 3, "top1", None, False),
    ]
    assert series_markdown(table)[:7] == [
        "",
        "**run** on **flickr**, mean recall by step:",
        "",
        "| step | model | mean recall |",
        "|---|---|---|",
        "| 1 | run.e1 | 40.00 [38.00, 42.00] |",
        "| 2 | run.e2 | **50.00 [48.00, 52.00]** (best) |",
    ]


@pytest.mark.slow
def test_the_series_figure_refuses_a_table_that_is_not_the_summarys_in_one_line(tmp_path):
    from conftest import run_cli

    other = tmp_path / "other.csv"
    other.write_text("model,dataset\nm,d\n")
    result = run_cli("plot-series", "--series", "run", "--table", other, "--output", tmp_path / "run.png")
    assert result.returncode == 1 and not (tmp_path / "run.png").exists()
    assert result.stderr == (
        f"clipeval: error: {other}: not a series table (the summary writes one: series, step, model, dataset, task,"
        " metric, value, ci_low, ci_high, best)\n"
    )
    table = tmp_path / "series.csv"
    table.write_text("series,step,model,dataset,task,metric,value,ci_low,ci_high,best\n")
    result = run_cli("plot-series", "--series", "run", "--table", table, "--output", tmp_path / "run.png")
    assert result.stderr == f"clipeval: error: {table}: no rows of series 'run'\n" and result.returncode == 1


SERIES_ROWS = [
    {"step": 10, "dataset": "flickr", "metric": "mean_recall", "value": 61.25},
    {"step": 2, "dataset": "flickr", "metric": "mean_recall", "value": 40.5},
    {"step": 2, "dataset": "cifar", "metric": "top1", "value": 33.0},
    {"step": 10, "dataset": "cifar", "metric": "top1", "value": None},
]


def test_tensorboard_reads_a_series_event_file_by_step_and_checks_every_record(tmp_path):
    """TensorBoard's own readers are the reference: its accumulator finds each dataset's main metric at each
    step (an undefined value left out), and its record reader accepts every record's CRCs."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.tensorflow_stub.errors import DataLossError
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New

    from clipeval.reporting.tensorboard_events import crc32c, series_events

    assert crc32c(b"123456789") == 0xE3069283  # CRC-32C's check value
    path = tmp_path / "events.out.tfevents.clipeval"
    path.write_bytes(series_events(SERIES_ROWS))
    assert series_events(SERIES_ROWS) == path.read_bytes()  # no clock, no host: the same rows, the same bytes
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == ["cifar/top1", "flickr/mean_recall"]
    assert [(e.step, e.value, e.wall_time) for e in events.Scalars("flickr/mean_recall")] == [
        (2, 40.5, 0.0),
        (10, 61.25, 0.0),
    ]
    assert [(e.step, e.value) for e in events.Scalars("cifar/top1")] == [(2, 33.0)]

    reader = PyRecordReader_New(str(path))
    for _ in range(3):  # the file version, then steps 2 and 10
        reader.GetNext()
    damaged = bytearray(path.read_bytes())
    damaged[-6] ^= 0xFF
    path.write_bytes(bytes(damaged))
    reader = PyRecordReader_New(str(path))
    with pytest.raises(DataLossError):
        for _ in range(3):
            reader.GetNext()


def test_a_ready_list_keeps_only_the_files_it_names_and_leaves_out_a_series_with_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ready.txt").write_text(f"{tmp_path}/ckpt/epoch_2.pt\n\n{tmp_path}/elsewhere/epoch_9.pt\n")
    config = config_with(
        {
            "run": {"arch": "RN50", "checkpoints": "ckpt/epoch_*.pt"},
            "later": {"arch": "RN50", "checkpoints": "later/epoch_*.pt"},
            "fixed": {"arch": "RN50", "pretrained": "openai"},
        },
        evaluate=[{"model": "later", "dataset": "d"}, {"model": "run", "dataset": "d"}],
    )
    config["ready_checkpoints"] = "ready.txt"
    files = {"ckpt/epoch_*.pt": ["ckpt/epoch_1.pt", "ckpt/epoch_2.pt"], "later/epoch_*.pt": ["later/epoch_1.pt"]}
    expand_checkpoint_series(config, files.get)
    assert list(config["models"]) == ["run.epoch_2", "fixed"]
    assert config[SERIES_KEY] == {"run": [[2, "run.epoch_2"]]}
    assert config["evaluate"] == [{"model": "run.epoch_2", "dataset": "d"}]


def test_a_ready_list_of_no_file_yet_or_unreadable_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ready.txt").write_text("")
    config = config_with({"run": {"arch": "RN50", "checkpoints": "ckpt/*.pt"}})
    with pytest.raises(ClipevalError) as error:
        expand_checkpoint_series({**config, "ready_checkpoints": "ready.txt"}, found("ckpt/epoch_1.pt"))
    assert str(error.value) == "ready_checkpoints: ready.txt lists no checkpoint of any series yet"
    with pytest.raises(ClipevalError) as error:
        expand_checkpoint_series({**config, "ready_checkpoints": "missing.txt"}, found("ckpt/epoch_1.pt"))
    assert str(error.value) == (
        "ready_checkpoints: missing.txt: cannot read the list of checkpoints (No such file or directory)"
    )
