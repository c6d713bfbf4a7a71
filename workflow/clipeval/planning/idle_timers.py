"""The end of a run: Snakemake's idle timers cancelled, so that its process exits as soon as the last job is done.

Each pass of Snakemake's scheduler starts a `threading.Timer` for its job rate
limit (`--max-jobs-per-timespan`, 100 jobs a second by default), which wakes
the scheduler again a second later. The timers are not daemon threads, so
Python waits for the last ones before the process ends: up to a second added
to every run, a re-run after a metric change included.
"""

import threading


def cancel_idle_timers() -> int:
    """Cancel every timer thread still waiting in this process (called once the run is over: nothing is left for
    them to wake); returns how many."""
    timers = [thread for thread in threading.enumerate() if isinstance(thread, threading.Timer)]
    for timer in timers:
        timer.cancel()
    return len(timers)
