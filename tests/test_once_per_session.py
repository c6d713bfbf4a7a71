"""build_once: the shared default experiment is built by one worker and waited for by the other."""

import multiprocessing
import time

import pytest
from once_per_session import build_once, result_digests


def _slow_build(directory):
    with open(directory.parent / "builds.log", "a") as log:
        log.write("built\n")
    time.sleep(0.5)  # long enough that the second asker arrives while the first builds
    directory.mkdir()
    (directory / "made").write_text("once")


def _ask(root, answers):
    answers.put(str(build_once(root, "thing", _slow_build)))


def test_two_workers_asking_at_once_get_one_build(tmp_path):
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    workers = [context.Process(target=_ask, args=(tmp_path, answers)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert [answers.get(timeout=1) for _ in workers] == [str(tmp_path / "thing")] * 2
    assert (tmp_path / "builds.log").read_text() == "built\n"
    assert (tmp_path / "thing/made").read_text() == "once"


def test_a_failed_build_fails_later_askers_without_building_again(tmp_path):
    attempts = []

    def failing(directory):
        attempts.append(directory)
        raise AssertionError("snakemake exited with 1")

    with pytest.raises(AssertionError, match="snakemake exited with 1"):
        build_once(tmp_path, "thing", failing)
    with pytest.raises(AssertionError) as later:
        build_once(tmp_path, "thing", failing)
    assert str(later.value) == "thing, built for another test, failed:\nsnakemake exited with 1"
    assert attempts == [tmp_path / "thing"]


def test_result_digests_cover_every_results_file_but_lmdb_locks(tmp_path):
    (tmp_path / "results/datasets/d/images").mkdir(parents=True)
    (tmp_path / "results/datasets/d/images/data.mdb").write_bytes(b"data")
    (tmp_path / "results/datasets/d/images/lock.mdb").write_bytes(b"readers")
    (tmp_path / "results/summary.md").write_text("R@1 1.00\n")
    (tmp_path / "notes.txt").write_text("outside results/")
    assert result_digests(tmp_path) == {
        "results/datasets/d/images/data.mdb": "3a6eb0790f39ac87c94f3856b2dd2c5d110e6811602261a9a923d3bb23adc8b7",
        "results/summary.md": "76060fe8d6b637ad8726ef9b5bb6b7416cf48eaf0a777bcea00436df80a1ce2f",
    }
