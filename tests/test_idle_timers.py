"""The end of a run cancels the timers Snakemake's scheduler leaves waiting, which would hold its process open."""

import threading

from clipeval.planning.idle_timers import cancel_idle_timers


def test_waiting_timers_end_at_once_without_running_and_other_threads_are_left_alone():
    woken, stop = [], threading.Event()
    timers = [threading.Timer(60, woken.append, args=[index]) for index in range(3)]
    other = threading.Thread(target=stop.wait)
    for thread in (*timers, other):
        thread.start()
    assert cancel_idle_timers() == 3
    for timer in timers:
        timer.join(5)
        assert not timer.is_alive()
    assert other.is_alive() and woken == []
    stop.set()
    other.join()
    assert cancel_idle_timers() == 0
