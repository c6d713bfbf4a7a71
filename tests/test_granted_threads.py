"""A job computes on no more threads than Snakemake granted it, under either numerics profile."""

import os

import pytest


def test_portable_numerics_refuse_a_job_given_fewer_threads_than_they_compute_with(monkeypatch):
    from clipeval.models.numerics import NumericsError, pin

    monkeypatch.setenv("OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))  # pin may set it
    with pytest.raises(NumericsError) as error:
        pin("portable", 1)
    assert str(error.value) == (
        "numerics: portable computes each torch job with 2 threads (its numbers depend on the count), and this job"
        " was given 1: run Snakemake with --cores 2 or more, or set numerics: native (then numbers depend on the"
        " machine and the thread count)"
    )
