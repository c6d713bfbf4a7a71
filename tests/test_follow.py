"""`clipeval follow`'s parts: which files are written whole, which have settled, what each round evaluates with
a stand-in for the workflow, and how a failed run's output is told (clipeval/following/)."""

import io
import json
import struct
import time
import zipfile

import pytest

from clipeval.errors import ClipevalError
from clipeval.following.loop import Follower, follow
from clipeval.following.runs import followed_series, problem
from clipeval.following.watch import Watch
from clipeval.models.checkpoint_files import written_whole


def zip_checkpoint() -> bytes:
    """The bytes torch.save writes: a zip archive (stored, as torch writes it)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00." * 50)
        archive.writestr("archive/data/0", bytes(range(256)) * 8)
    return buffer.getvalue()


def safetensors_checkpoint() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "__metadata__": {}}).encode()
    return struct.pack("<Q", len(header)) + header + bytes(16)


@pytest.mark.parametrize("suffix, whole", [(".pt", zip_checkpoint()), (".safetensors", safetensors_checkpoint())])
def test_a_checkpoint_cut_anywhere_is_not_whole_and_the_whole_one_is(tmp_path, suffix, whole):
    path = tmp_path / f"epoch_1{suffix}"
    path.write_bytes(whole)
    assert written_whole(path)
    for cut in sorted({1, 7, 8, 9, len(whole) // 2, len(whole) - 22, len(whole) - 1}):
        path.write_bytes(whole[:cut])
        assert not written_whole(path), cut
    path.write_bytes(whole + b"\0")
    assert written_whole(path) == (suffix == ".pt")  # a zip may carry bytes after its end; safetensors may not


def test_a_file_that_cannot_tell_counts_as_whole_and_one_that_cannot_be_read_does_not(tmp_path):
    legacy = tmp_path / "epoch_1.pt"
    legacy.write_bytes(b"\x80\x02legacy pickle")
    assert written_whole(legacy)
    assert not written_whole(tmp_path / "gone.pt")


def test_a_file_is_ready_once_unchanged_for_the_settling_time():
    sizes = {"a": (10, 1), "b": (5, 1)}
    watch = Watch(settle=5)
    ready = lambda now: watch.ready(["a", "b"], now, look=sizes.get, whole=lambda path: True)  # noqa: E731
    assert ready(0) == {}
    assert ready(4.9) == {}
    sizes["b"] = (9, 2)  # still being written
    assert ready(5) == {"a": (10, 1)}
    assert ready(9.9) == {"a": (10, 1)}
    assert ready(10) == {"a": (10, 1), "b": (9, 2)}
    del sizes["a"]  # removed
    assert ready(11) == {"b": (9, 2)}


def test_an_empty_or_unfinished_file_is_never_ready():
    watch = Watch(settle=0)
    assert watch.ready(["empty"], 0, look=lambda path: (0, 1), whole=lambda path: True) == {}
    assert watch.ready(["cut"], 0, look=lambda path: (9, 1), whole=lambda path: False) == {}


class Workflow:
    """A stand-in for the workflow's runs: records what each run listed; fails a run listing a `bad` file."""

    def __init__(self, follower_of, bad=()):
        self.runs, self.bad, self.follower_of = [], set(bad), follower_of

    def __call__(self, new_paths, new_models):
        listed = self.follower_of().ready_list.read_text().split()
        self.runs.append(([path.rsplit("/", 1)[1] for path in listed], new_models))
        if any(path.rsplit("/", 1)[1] in self.bad for path in listed):
            return "failed: describe_model (logs/x.log): cannot read the checkpoint"
        return None


def a_follower(tmp_path, bad=(), last_step=None, settle=1):
    said = []
    holder = []
    workflow = Workflow(lambda: holder[0], bad)
    follower = Follower(
        {"run": str(tmp_path / "run/epoch_*.pt")},
        tmp_path / "ready.txt",
        workflow,
        settle=settle,
        last_step=last_step,
        say=said.append,
    )
    holder.append(follower)
    (tmp_path / "run").mkdir(parents=True)
    return follower, workflow, said


def test_each_checkpoint_is_evaluated_once_when_whole_with_the_ones_before(tmp_path):
    follower, workflow, said = a_follower(tmp_path)
    whole = zip_checkpoint()
    (tmp_path / "run/epoch_1.pt").write_bytes(whole)
    (tmp_path / "run/epoch_2.pt").write_bytes(whole[:100])  # being written
    (tmp_path / "run/epoch_latest.pt").write_bytes(whole)
    follower.round(0)
    assert workflow.runs == []
    follower.round(1)
    assert workflow.runs == [(["epoch_1.pt"], ["run.epoch_1"])]
    follower.round(2)
    assert len(workflow.runs) == 1  # nothing new
    (tmp_path / "run/epoch_2.pt").write_bytes(whole)
    (tmp_path / "run/epoch_3.pt").write_bytes(whole)
    follower.round(3)
    follower.round(4)
    assert workflow.runs[1:] == [(["epoch_1.pt", "epoch_2.pt", "epoch_3.pt"], ["run.epoch_2", "run.epoch_3"])]
    assert said == [
        f"{tmp_path}/run/epoch_latest.pt: its name has no step number (epoch_3.pt); not followed",
        "evaluating run.epoch_1",
        "evaluated run.epoch_1 (step 1)",
        "evaluating run.epoch_2, run.epoch_3",
        "evaluated run.epoch_2 (step 2)",
        "evaluated run.epoch_3 (step 3)",
    ]


def test_a_bad_checkpoint_names_itself_holds_back_no_other_and_is_tried_again_once_changed(tmp_path):
    follower, workflow, said = a_follower(tmp_path, bad={"epoch_2.pt"})
    for epoch in (1, 2, 3):
        (tmp_path / f"run/epoch_{epoch}.pt").write_bytes(zip_checkpoint())
    follower.round(0)
    follower.round(1)
    follower.round(2)
    failure = "failed: describe_model (logs/x.log): cannot read the checkpoint"
    assert workflow.runs == [
        (["epoch_1.pt", "epoch_2.pt", "epoch_3.pt"], ["run.epoch_1", "run.epoch_2", "run.epoch_3"]),
        (["epoch_1.pt"], ["run.epoch_1"]),
        (["epoch_1.pt", "epoch_2.pt"], ["run.epoch_2"]),
        (["epoch_1.pt", "epoch_3.pt"], ["run.epoch_3"]),
    ]
    assert said[1:] == [
        f"the evaluation of 3 new checkpoints failed ({failure}); trying them one at a time",
        "evaluating run.epoch_1",
        "evaluated run.epoch_1 (step 1)",
        "evaluating run.epoch_2",
        f"{tmp_path}/run/epoch_2.pt: its evaluation failed ({failure}); tried again once the file changes, or in"
        " 10 minutes",
        "evaluating run.epoch_3",
        "evaluated run.epoch_3 (step 3)",
    ]
    follower.round(100)
    assert len(workflow.runs) == 4  # not tried again, unchanged, before retry_after
    follower.round(1 + 600)  # a passing trouble (memory, the cluster) may have gone: tried again, and fails
    assert workflow.runs[4:] == [(["epoch_1.pt", "epoch_3.pt", "epoch_2.pt"], ["run.epoch_2"])]
    workflow.bad.clear()
    (tmp_path / "run/epoch_2.pt").write_bytes(zip_checkpoint() + b"\0")  # written again
    follower.round(602)
    follower.round(603)
    assert workflow.runs[5:] == [(["epoch_1.pt", "epoch_3.pt", "epoch_2.pt"], ["run.epoch_2"])]
    assert follower.failed == {} and sorted(follower.evaluated) == [
        str(tmp_path / f"run/epoch_{n}.pt") for n in (1, 2, 3)
    ]


def test_a_failed_last_step_ends_the_follow_and_names_are_matched_whole(tmp_path):
    from clipeval.following.runs import names

    follower, workflow, said = a_follower(tmp_path, bad={"epoch_3.pt"}, last_step=3, settle=0)
    for epoch in (1, 3):
        (tmp_path / f"run/epoch_{epoch}.pt").write_bytes(zip_checkpoint())
    follower.round(0)
    assert list(follower.failed) == [str(tmp_path / "run/epoch_3.pt")] and follower.finished()
    assert names("models.run.epoch_1: no such tag", "run.epoch_1")
    assert names("run/epoch_1.pt and run/epoch_01.pt both have step 1.", "run/epoch_1.pt")
    assert not names("models.run.epoch_10: no such tag", "run.epoch_1")
    assert not names("myrun.epoch_1: x", "run.epoch_1")


def test_a_removed_checkpoint_leaves_the_next_evaluation_and_the_last_step_ends_the_loop(tmp_path):
    follower, workflow, said = a_follower(tmp_path, last_step=3, settle=0)
    for epoch in (1, 2):
        (tmp_path / f"run/epoch_{epoch}.pt").write_bytes(zip_checkpoint())
    follower.round(0)
    assert not follower.finished()
    (tmp_path / "run/epoch_1.pt").unlink()
    (tmp_path / "run/epoch_3.pt").write_bytes(zip_checkpoint())
    follower.round(1)
    assert workflow.runs[-1] == (["epoch_2.pt", "epoch_3.pt"], ["run.epoch_3"])
    assert f"{tmp_path}/run/epoch_1.pt: gone; the next evaluation leaves run.epoch_1 out" in said
    assert follower.finished()


def test_the_loop_stops_at_the_last_step_on_a_signal_or_once_what_is_there_has_settled(tmp_path):
    class Clock:
        now = 0.0

        def __call__(self):
            return self.now

        def sleep(self, seconds):
            self.now += seconds

    follower, workflow, said = a_follower(tmp_path, last_step=2, settle=1)
    (tmp_path / "run/epoch_2.pt").write_bytes(zip_checkpoint())
    clock = Clock()
    assert follow(follower, 5, False, clock, clock.sleep, lambda: False) == "every series reached step 2"
    assert clock.now == pytest.approx(5)

    follower, workflow, said = a_follower(tmp_path / "once", settle=1)
    (tmp_path / "once/run/epoch_1.pt").write_bytes(zip_checkpoint())
    clock = Clock()
    assert follow(follower, 30, True, clock, clock.sleep, lambda: False) == "evaluated every checkpoint that was ready"
    assert [models for _, models in workflow.runs] == [["run.epoch_1"]] and clock.now == pytest.approx(1)

    follower, workflow, said = a_follower(tmp_path / "signal", settle=0)
    clock = Clock()
    stop = []
    clock.sleep = lambda seconds: (setattr(clock, "now", clock.now + seconds), stop.append(15))
    assert follow(follower, 30, False, clock, clock.sleep, lambda: bool(stop)) == "stopped by a signal"


def test_a_run_stopped_by_a_signal_is_not_held_against_its_checkpoint(tmp_path):
    follower, workflow, said = a_follower(tmp_path, bad={"epoch_1.pt", "epoch_2.pt"}, settle=0)
    for epoch in (1, 2):
        (tmp_path / f"run/epoch_{epoch}.pt").write_bytes(zip_checkpoint())
    follower.round(0, stopping=lambda: bool(workflow.runs))  # the signal comes during the first run
    assert follower.failed == {} and follower.evaluated == {} and len(workflow.runs) == 1
    assert said[-1] == "stopped while evaluating run.epoch_1, run.epoch_2; the next follow evaluates them"
    follower.round(1, stopping=lambda: True)  # a signal before a run: none starts
    assert len(workflow.runs) == 1


def test_a_failed_run_is_told_in_one_line_and_one_not_of_the_new_checkpoints_ends_the_follow(tmp_path):
    log = tmp_path / "follow.log"
    assert problem(0, "anything", log, [], []) is None
    output = "Building DAG of jobs...\nfailed: describe_model (logs/d.log): BadZipFile\nExiting because a job failed\n"
    assert problem(1, output, log, ["run/epoch_2.pt"], ["run.epoch_2"]) == (
        f"failed: describe_model (logs/d.log): BadZipFile; the run's output: {log}"
    )
    named = "config error: models.run.checkpoints: run/epoch_2.pt and run/epoch_02.pt both have step 2\n"
    assert problem(1, named, log, ["run/epoch_02.pt"], ["run.epoch_02"]).startswith("config error: models.run")
    with pytest.raises(ClipevalError) as error:
        problem(1, "config error: datasets.x.images: not found\n", log, ["run/epoch_2.pt"], ["run.epoch_2"])
    assert str(error.value) == "datasets.x.images: not found"
    with pytest.raises(ClipevalError) as error:
        problem(1, "LockException:\nError: Directory cannot be locked. Please make sure", log, [], [])
    assert str(error.value).startswith("another Snakemake run holds this folder's lock (.snakemake/locks)")


def test_the_followed_series_are_the_models_with_checkpoints_and_a_config_without_one_is_refused(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(
        "models:\n  run: {arch: RN50, checkpoints: 'a/epoch_*.pt'}\n  tag: {arch: RN50, pretrained: openai}\n"
    )
    assert followed_series(config) == {"run": "a/epoch_*.pt"}
    config.write_text("models:\n  tag: {arch: RN50, pretrained: openai}\n")
    with pytest.raises(ClipevalError) as error:
        followed_series(config)
    assert str(error.value) == (
        f"{config}: no model names `checkpoints:` (a glob of a run's checkpoint files) to follow"
    )
    config.write_text('__use_yte__: true\nmodels: ?open("evaluated", "w")\n')
    with pytest.raises(ClipevalError) as error:
        followed_series(config)
    assert "__use_yte__ asks Snakemake to run the config's ?-expressions as Python" in str(error.value)


SERIES_ROWS = [
    {"series": "run", "step": "1", "dataset": "flickr", "metric": "mean_recall", "value": "10.5"},
    {"series": "run", "step": "2", "dataset": "flickr", "metric": "mean_recall", "value": "12.25"},
    {"series": "run", "step": "2", "dataset": "cifar", "metric": "top1", "value": ""},
    {"series": "run", "step": "10", "dataset": "flickr", "metric": "mean_recall", "value": "15"},
    {"series": "other", "step": "3", "dataset": "flickr", "metric": "mean_recall", "value": "1"},
]


def test_only_steps_beyond_those_logged_are_logged_in_step_order():
    from clipeval.following.wandb_runs import loggable, run_id

    assert loggable(SERIES_ROWS, {"run": 1}) == {
        "run": [(2, {"flickr/mean_recall": 12.25}), (10, {"flickr/mean_recall": 15.0})],
        "other": [(3, {"flickr/mean_recall": 1.0})],
    }
    assert loggable(SERIES_ROWS, {"run": 10, "other": 3}) == {}
    assert run_id("my.exp", "run/1") == "my-exp-run-1"


def wandb_records(path):
    """The protobuf records of a W&B transaction log (.wandb): a 7-byte header, then LevelDB's log format of
    32 KiB blocks, each chunk behind a 7-byte header (CRC, length, type: 1 whole, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, offset, block = [], b"", 7, 32768
    while offset + 7 <= len(data):
        left = block - offset % block
        if left < 7:
            offset += left
            continue
        _, length, kind = struct.unpack("<IHB", data[offset : offset + 7])
        if kind == 0:
            offset += left
            continue
        if offset + 7 + length > len(data):
            break  # a chunk still being written
        pending += data[offset + 7 : offset + 7 + length]
        offset += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def finished_wandb_records(path, within_s=60):
    """The records of a run's transaction log once it ends in the run's exit record. W&B's service process writes
    the log on its own schedule, so under load it can still be short of that when `finish()` has returned."""
    deadline = time.monotonic() + within_s
    while True:
        records = wandb_records(path)
        kinds = [record.WhichOneof("record_type") for record in records]
        if kinds[-1:] == ["exit"]:
            return records
        assert time.monotonic() < deadline, f"{path} holds no exit record after {within_s} s: {kinds}"
        time.sleep(0.5)


@pytest.mark.slow
def test_a_follow_logs_each_series_to_its_wandb_run_offline_and_not_twice_after_a_restart(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    from clipeval.following.wandb_runs import WandbRuns

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    state = tmp_path / "steps.json"
    runs = WandbRuns("clipeval-test", "exp", tmp_path / "wandb-files", state)
    assert runs.log(SERIES_ROWS[:2]) == ["logged steps 1, 2 of run to W&B (exp-run)"]
    runs.close()
    restarted = WandbRuns("clipeval-test", "exp", tmp_path / "wandb-files", state)
    assert restarted.log(SERIES_ROWS) == [
        "logged steps 10 of run to W&B (exp-run)",
        "logged steps 3 of other to W&B (exp-other)",
    ]
    restarted.close()
    assert json.loads(state.read_text()) == {"other": 3, "run": 10}

    logged = {}
    for path in sorted((tmp_path / "wandb-files/wandb").glob("offline-run-*/run-*.wandb")):
        records = finished_wandb_records(path)
        run = next(record.run for record in records if record.WhichOneof("record_type") == "run")
        assert run.project == "clipeval-test" and run.display_name == f"exp/{run.run_id.removeprefix('exp-')}"
        for record in records:
            if record.WhichOneof("record_type") == "history":
                items = {
                    item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item
                }
                logged.setdefault(run.run_id, []).append((items["_step"], items["flickr/mean_recall"]))
    assert logged == {"exp-run": [(1, 10.5), (2, 12.25), (10, 15.0)], "exp-other": [(3, 1.0)]}


def test_a_checkpoint_that_changes_while_evaluated_is_not_held_against_the_new_one(tmp_path):
    follower, workflow, said = a_follower(tmp_path, settle=0)
    (tmp_path / "run/epoch_1.pt").write_bytes(zip_checkpoint())
    follower.round(0)
    (tmp_path / "run/epoch_2.pt").write_bytes(zip_checkpoint())

    def removed_during_the_run(new_paths, new_models):
        (tmp_path / "run/epoch_1.pt").unlink()
        return "failed: describe_model (logs/d.log): No such file"

    follower.evaluate = removed_during_the_run
    follower.round(1)
    assert follower.failed == {}
    assert said[-1] == (
        "a checkpoint changed during the evaluation of run.epoch_2 (failed: describe_model (logs/d.log): No such"
        " file); tried again once it has settled"
    )
    follower.evaluate = workflow
    follower.round(2)
    assert workflow.runs[-1] == (["epoch_2.pt"], ["run.epoch_2"])


def test_following_a_config_without_a_series_is_one_line_and_exit_1(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    config = tmp_path / "plain.yaml"
    config.write_text("models:\n  tag: {arch: RN50, pretrained: openai}\n")
    result = subprocess.run(
        [sys.executable, "-m", "clipeval", "follow", str(config), "--once"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "workflow")},
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"clipeval: error: {config}: no model names `checkpoints:` (a glob of a run's checkpoint files) to follow\n"
    )
    assert not (tmp_path / "results").exists() and not (tmp_path / "logs").exists()


def test_a_poll_of_no_seconds_is_refused_in_one_line(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    result = subprocess.run(
        [sys.executable, "-m", "clipeval", "follow", "x.yaml", "--poll", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "workflow")},
    )
    assert result.returncode == 2 and result.stderr.splitlines()[-1].endswith(
        "argument --poll: must be more than 0 seconds: the follow would look without a pause"
    )
