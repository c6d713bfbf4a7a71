"""A failed run ends with each failed job's rule, log and message (planning/failed_jobs.py), read from the
run's log as Snakemake 9 writes it."""

from clipeval.planning.failed_jobs import failed_jobs, failure_lines, last_line

RUN_LOG = """\
Building DAG of jobs...
[Fri Nov 27 17:00:00 2026]
localrule prepare_karpathy:
    output: results/datasets/ab12/meta.json
    log: logs/prepare/ab12.log
    jobid: 3
Error in rule prepare_karpathy:
    message: None
    jobid: 3
    output: results/datasets/ab12/meta.json
    log: logs/prepare/ab12.log (check log file(s) for error details)
    shell:
        python -m clipeval prepare karpathy ... 2> logs/prepare/ab12.log
        (command exited with non-zero exit code)
Error in rule score_probe:
    jobid: 9
    log: logs/score/probe.log, logs/score/probe-extra.log (check log file(s) for error details)
Error in rule all:
    jobid: 0
Error in rule prepare_karpathy:
    message: None
    jobid: 3
    log: logs/prepare/ab12.log (check log file(s) for error details)
Shutting down, this might take some time.
Exiting because a job execution failed. Look below for error messages
"""


def test_each_failed_job_is_read_once_with_its_logs():
    assert failed_jobs(RUN_LOG) == [
        ("prepare_karpathy", ["logs/prepare/ab12.log"]),
        ("score_probe", ["logs/score/probe.log", "logs/score/probe-extra.log"]),
        ("all", []),
    ]


def test_each_failed_job_gets_a_line_with_its_log_s_last_line(tmp_path):
    (tmp_path / "logs/prepare").mkdir(parents=True)
    (tmp_path / "logs/score").mkdir()
    (tmp_path / "logs/prepare/ab12.log").write_text("images: 3 read\nclipeval: error: a.json: image 7.png missing\n")
    (tmp_path / "logs/score/probe.log").write_text("fit: 10%\rfit: 50%\rclipeval: error: too few images\r\n\n")
    (tmp_path / "logs/score/probe-extra.log").write_text("")
    assert failure_lines(RUN_LOG, tmp_path) == [
        "failed: prepare_karpathy (logs/prepare/ab12.log): clipeval: error: a.json: image 7.png missing",
        "failed: score_probe (logs/score/probe.log): clipeval: error: too few images",
        "failed: score_probe (logs/score/probe-extra.log): its log is empty or missing",
        "failed: all (no log)",
    ]


def test_the_last_line_is_read_from_the_end_of_a_long_log(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(b"x" * 100_000 + b"\nlast words\n")
    assert last_line(log) == "last words"
    assert last_line(tmp_path / "missing.log") is None


def test_a_control_character_in_the_last_line_is_shown_escaped(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(b"clipeval: error: key a\x1b[2Jb\x07\n")
    assert last_line(log) == "clipeval: error: key a\\x1b[2Jb\\x07"
