"""The follow loop: each round lists the series' files, and evaluates those newly ready together with those
evaluated before (a run of the workflow whose `ready_checkpoints` list names them all), so that the summary,
the series plot and the TensorBoard events cover every checkpoint so far while only new ones cost jobs.

A batch whose run fails is tried again one checkpoint at a time, so that one bad file names itself and does
not hold the others back. A failed file is tried again once it changes, or after `retry_after` seconds. The
loop's state is only in memory: after a kill, the next follow evaluates every ready file again, and the
workflow's cache runs only what the kill left undone.
"""

import glob
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clipeval.following.watch import Watch, signature
from clipeval.models.checkpoint_files import checkpoint_step, member_name
from clipeval.storage.atomic import atomic_output

# What one evaluation came to.
EVALUATED, FAILED, CHANGED, STOPPED = "evaluated", "failed", "changed", "stopped"


def files_matching(pattern: str) -> list[str]:
    return sorted(path for path in glob.glob(pattern, recursive=True) if os.path.isfile(path))


@dataclass
class Follower:
    """`series`: {name: glob}. `evaluate(new_paths, new_models)` runs the workflow on the checkpoints listed
    in `ready_list` (those evaluated before, then the new ones) and returns None, or what went wrong in one
    line. `say` prints a line; `headline(model)` is a checkpoint's main metrics after its evaluation, and
    `after_evaluation()` runs after each evaluation that succeeded."""

    series: dict[str, str]
    ready_list: Path
    evaluate: Callable[[list[str], list[str]], str | None]
    settle: float
    last_step: int | None = None
    say: Callable[[str], None] = print
    headline: Callable[[str], str] = lambda model: ""
    after_evaluation: Callable[[], None] = lambda: None
    find: Callable[[str], list[str]] = files_matching
    retry_after: float = 600.0
    evaluated: dict[str, tuple[int, int]] = field(default_factory=dict)
    failed: dict[str, tuple[tuple[int, int], float]] = field(default_factory=dict)  # (signature, when)
    stepless: set[str] = field(default_factory=set)

    def __post_init__(self):
        self.watch = Watch(self.settle)
        self.series_of = {}

    def round(self, now: float, stopping: Callable[[], bool] = lambda: False) -> None:
        """Evaluate what became ready since the last round."""
        listed = self._listed()
        for path in sorted(set(self.evaluated) - set(listed)):
            self.say(f"{path}: gone; the next evaluation leaves {self._model(path)} out")
            del self.evaluated[path]
        ready = self.watch.ready(listed, now)
        kept = [path for path in ready if self.evaluated.get(path) == ready[path]]
        new = sorted(
            (path for path in ready if path not in kept and self._due(path, ready[path], now)), key=checkpoint_step
        )
        if not new:
            return
        outcome = self._evaluated(kept, new, ready, now, stopping)
        if outcome != FAILED or len(new) == 1:
            return
        for path in new:
            kept = [earlier for earlier in ready if self.evaluated.get(earlier) == ready[earlier]]
            if self._evaluated(kept, [path], ready, now, stopping) in (STOPPED, CHANGED):
                return

    def _due(self, path: str, current: tuple[int, int], now: float) -> bool:
        """Whether a ready file not evaluated as it is now is evaluated this round: not one whose evaluation
        failed as it is now, unless `retry_after` seconds have passed (a cluster's or the machine's passing
        trouble), or its file changed."""
        failure = self.failed.get(path)
        return failure is None or failure[0] != current or now - failure[1] >= self.retry_after

    def finished(self) -> bool:
        """Whether every series has a checkpoint at `last_step` or beyond that was evaluated, or whose evaluation
        failed (the command then ends with the failures)."""
        if self.last_step is None:
            return False
        done = [*self.evaluated, *self.failed]
        reached = {self.series_of[path] for path in done if checkpoint_step(path) >= self.last_step}
        return reached == set(self.series)

    def _listed(self) -> list[str]:
        """Every file of every series whose name carries a step (a file without one is named once)."""
        listed = []
        for name, pattern in self.series.items():
            for path in self.find(pattern):
                if checkpoint_step(path) is None:
                    if path not in self.stepless:
                        self.say(f"{path}: its name has no step number (epoch_3.pt); not followed")
                        self.stepless.add(path)
                    continue
                self.series_of[path] = name
                listed.append(path)
        return listed

    def _model(self, path: str) -> str:
        return member_name(self.series_of[path], path)

    def _evaluated(self, kept, new, ready, now, stopping) -> str:
        """Run the workflow on kept + new, unless a stop was asked; record the outcome of the new ones. Returns
        EVALUATED, FAILED, CHANGED (a listed file changed or went during the run, so the failure may be that, not
        the new checkpoints') or STOPPED."""
        if stopping():
            return STOPPED
        with atomic_output(self.ready_list) as temporary:
            temporary.write_text("".join(f"{os.path.abspath(path)}\n" for path in [*kept, *new]), encoding="utf-8")
        models = [self._model(path) for path in new]
        self.say(f"evaluating {', '.join(models)}")
        problem = self.evaluate(new, models)
        if problem is None:
            for path in new:
                self.evaluated[path] = ready[path]
                self.failed.pop(path, None)
                model = self._model(path)
                self.say(f"evaluated {model} (step {checkpoint_step(path)}){self.headline(model)}")
            self.after_evaluation()
            return EVALUATED
        if stopping():
            self.say(f"stopped while evaluating {', '.join(models)}; the next follow evaluates them")
            return STOPPED
        if any(signature(path) != ready[path] for path in [*kept, *new]):
            self.say(
                f"a checkpoint changed during the evaluation of {', '.join(models)} ({problem}); tried again once"
                " it has settled"
            )
            return CHANGED
        if len(new) == 1:
            self.failed[new[0]] = (ready[new[0]], now)
            self.say(
                f"{new[0]}: its evaluation failed ({problem}); tried again once the file changes, or in"
                f" {self.retry_after / 60:g} minutes"
            )
        else:
            self.say(f"the evaluation of {len(new)} new checkpoints failed ({problem}); trying them one at a time")
        return FAILED


def follow(follower: Follower, poll: float, once: bool, clock, sleep, stopping: Callable[[], bool]) -> str:
    """Rounds every `poll` seconds until the follower has finished or `stopping()`; with `once`, until the
    files present now have settled. Returns why it stopped."""
    started = clock()
    while True:
        follower.round(clock(), stopping)
        if stopping():
            return "stopped by a signal"
        if follower.finished():
            return f"every series reached step {follower.last_step}"
        if once and clock() - started >= follower.settle:
            return "evaluated every checkpoint that was ready"
        wait = min(poll, max(follower.settle - (clock() - started), 0.0)) if once else poll
        deadline = clock() + wait
        while clock() < deadline and not stopping():
            sleep(min(0.2, max(deadline - clock(), 0.0)))
