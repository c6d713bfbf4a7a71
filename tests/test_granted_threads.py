"""A job computes on no more threads than Snakemake granted it, under either numerics profile."""

import os

import pytest


def test_portable_numerics_refuse_a_job_given_fewer_threads_than_they_compute_with(monkeypatch):
    from clipeval.numerics import NumericsError, pin

    monkeypatch.setenv("OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))  # pin may set it
    with pytest.raises(NumericsError) as error:
        pin("portable", 1)
    assert str(error.value) == (
        "numerics: portable computes each torch job with 2 threads (its numbers depend on the count), and this job"
        " was given 1: run Snakemake with --cores 2 or more, or set numerics: native (then numbers depend on the"
        " machine and the thread count)"
    )


@pytest.mark.parametrize("threads", ["1", "3"])
def test_ordered_map_keeps_order_and_raises_an_error_at_its_place(monkeypatch, threads):
    import threading
    import time

    from clipeval.threads import ordered_map

    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    workers = set()

    def slow_square(value):
        workers.add(threading.get_ident())
        time.sleep(0.02 * (value % 3))  # later items often finish first
        if value == 7:
            raise ValueError("item 7")
        return value * value

    results = []
    with pytest.raises(ValueError, match="item 7"):
        for result in ordered_map(slow_square, iter(range(20)), ahead_per_thread=2):
            results.append(result)
    assert results == [value * value for value in range(7)]
    assert len(workers) == int(threads)
