"""What a machine that refuses a write does to a run: a full disk (imitated by a file size limit, which fails
each write past it as a full disk would), a folder where a file should be, a cache that cannot be written.
Each ends in one line naming the file, exit status 1, and nothing that looks finished."""

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from snakemake_runner import copy_workflow, snakemake


def run_with_file_size_limit(limit, *args):
    """`python -m clipeval ARGS` in a process whose writes past `limit` bytes per file fail with EFBIG."""

    def limit_writes():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer instead of failing it
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "clipeval", *map(str, args)], capture_output=True, text=True, preexec_fn=limit_writes
    )


def test_a_full_disk_while_preparing_names_the_image_store_and_leaves_no_dataset(tmp_path):
    out = tmp_path / "shapes"
    result = run_with_file_size_limit(64 << 10, "prepare", "shapes", "--num-images", 200, "--seed", 0, "--out", out)
    assert result.returncode == 1
    assert result.stderr.startswith(f"clipeval: error: {out}/images.lmdb: cannot write the image store (")
    assert result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_writing_a_table_names_it_and_leaves_nothing(tmp_path):
    from test_summary import metrics

    from clipeval.storage.jsonl import write_json

    write_json(tmp_path / "score.json", metrics(12.5))
    outputs = [
        word
        for name in ("csv", "markdown", "averages", "comparisons", "series")
        for word in (f"--{name}", tmp_path / f"s.{name}")
    ]
    entries = ["--entry", "m", "d", tmp_path / "score.json"]
    result = run_with_file_size_limit(100, "summarize", *entries, *outputs)
    assert result.returncode == 1
    assert result.stderr == f"clipeval: error: {tmp_path}/s.csv: cannot write (File too large)\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["score.json"]


def test_a_refused_folder_is_one_line_naming_it(tmp_path):
    (tmp_path / "taken").write_text("a file where the dataset's folder should go")
    result = run_cli("prepare", "shapes", "--num-images", 4, "--seed", 0, "--out", tmp_path / "taken/shapes")
    assert result.returncode == 1
    assert result.stderr == f"clipeval: error: {tmp_path}/taken: not a folder, so nothing can be written into it\n"


def test_a_permission_refused_is_one_line_naming_the_file(monkeypatch, capsys):
    """As a read-only results folder refuses (the tests run as root, whom no mode refuses)."""
    from clipeval import cli
    from clipeval.commands import summarize

    def refuse(args):
        raise PermissionError(errno.EACCES, "Permission denied", "results/experiments/x/summary.csv")

    monkeypatch.setattr(summarize, "run", refuse)
    options = ["--csv", "a", "--markdown", "b", "--averages", "c", "--comparisons", "d", "--series", "e"]
    assert cli.main(["summarize", *options]) == 1
    assert capsys.readouterr().err == "clipeval: error: results/experiments/x/summary.csv: Permission denied\n"


def test_a_digest_cache_that_cannot_be_written_changes_no_digest(tmp_path):
    from clipeval.planning.content_digests import file_digest, folder_digest

    (tmp_path / "images").mkdir()
    (tmp_path / "images/1.png").write_bytes(b"one")
    expected = (
        folder_digest(tmp_path / "images", tmp_path / "cache"),
        file_digest(tmp_path / "images/1.png", tmp_path / "cache"),
    )
    (tmp_path / "blocked").write_text("a file where the cache folder should go")
    blocked = tmp_path / "blocked/cache"
    assert (folder_digest(tmp_path / "images", blocked), file_digest(tmp_path / "images/1.png", blocked)) == expected


@pytest.mark.slow
def test_planning_that_cannot_write_an_arguments_file_stops_with_one_line(tmp_path):
    """The file is written while Snakemake builds its DAG, after its own opening lines: the error is the last
    line, with no traceback."""
    workdir = copy_workflow(tmp_path / "experiment")
    (workdir / ".snakemake").mkdir(exist_ok=True)
    (workdir / ".snakemake/clipeval-arguments").write_text("a file where the folder should go")
    result = snakemake(workdir, "--dry-run")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output[-3000:]
    assert output.rstrip().splitlines()[-1] == (
        "error: .snakemake/clipeval-arguments: not a folder, so nothing can be written into it"
    )


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has used, user and system (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
def test_ctrl_c_stops_a_command_with_one_line_and_no_output(tmp_path):
    """What every job of a run gets when the user presses Ctrl-C: SIGINT, here in the middle of writing a
    dataset. Its log shows one line, not the frames the command was in."""
    import time

    out = tmp_path / "shapes"
    process = subprocess.Popen(
        [sys.executable, "-m", "clipeval", "prepare", "shapes", "--num-images", "50000", "--seed", "0", "--out", out],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        # As in a terminal: a process that inherits an ignored SIGINT keeps ignoring it, never raising
        # KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # Past Python's start and its imports, in the middle of making the images (the whole takes much longer):
    # once the process has computed for a second and a half, however loaded the machine.
    deadline = time.monotonic() + 120
    while cpu_seconds(process.pid) < 1.5 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # where it was, instead of only that it went on
        process.send_signal(signal.SIGABRT)
        _, stderr = process.communicate(timeout=60)
        pytest.fail(f"prepare went on for 60 s after SIGINT; its threads:\n{stderr[-6000:]}")
    assert process.returncode == 130
    assert stderr == "clipeval: prepare interrupted (Ctrl-C); it left no output\n"
    assert list(tmp_path.iterdir()) == []
