"""A follow's checkpoints on Weights & Biases: one W&B run per series, each checkpoint's main metrics logged at its
step as `DATASET/METRIC`, as the TensorBoard event file has them. W&B's own WANDB_MODE decides where they go
(`offline` writes a local run folder that `wandb sync` uploads later). Steps already logged, kept in a small
state file, are not logged again after a restart: W&B refuses a step lower than one it has."""

import json
import re

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output

# W&B run ids: letters, digits, - and _ (at most 64 characters here).
RUN_ID_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")


def run_id(experiment: str, series: str) -> str:
    return RUN_ID_CHARACTERS.sub("-", f"{experiment}-{series}")[:64]


def loggable(rows: list[dict], logged: dict[str, int]) -> dict[str, list[tuple[int, dict[str, float]]]]:
    """{series: [(step, {DATASET/METRIC: value})]} of the series.csv rows at steps beyond those `logged`, in step
    order; a metric without a value is left out."""
    found = {}
    for row in rows:
        step = int(row["step"])
        if step <= logged.get(row["series"], -1) or not row["value"]:
            continue
        found.setdefault(row["series"], {}).setdefault(step, {})[f"{row['dataset']}/{row['metric']}"] = float(
            row["value"]
        )
    return {series: sorted(steps.items()) for series, steps in found.items()}


class WandbRuns:
    """The open W&B runs of one follow, by series."""

    def __init__(self, project: str, experiment: str, folder, state_file):
        try:
            import wandb
        except ImportError:
            raise ClipevalError(
                "--wandb needs Weights & Biases' package: .venv/bin/pip install -e '.[wandb]'"
            ) from None
        self.wandb, self.project, self.experiment = wandb, project, experiment
        self.folder, self.state_file, self.runs = folder, state_file, {}
        try:
            self.logged = json.loads(state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.logged = {}

    def log(self, rows: list[dict]) -> list[str]:
        """Log what is new in these series.csv rows; returns a line per series it logged."""
        lines = []
        for series, steps in loggable(rows, self.logged).items():
            run = self._run(series)
            for step, values in steps:
                run.log(values, step=step)
            self.logged[series] = steps[-1][0]
            lines.append(f"logged steps {', '.join(str(step) for step, _ in steps)} of {series} to W&B ({run.id})")
        with atomic_output(self.state_file) as temporary:
            temporary.write_text(json.dumps(self.logged, sort_keys=True), encoding="utf-8")
        return lines

    def _run(self, series: str):
        if series not in self.runs:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.runs[series] = self.wandb.init(
                project=self.project,
                id=run_id(self.experiment, series),
                name=f"{self.experiment}/{series}",
                dir=str(self.folder),
                resume="allow",
                config={"experiment": self.experiment, "series": series},
                reinit="create_new",
            )
        return self.runs[series]

    def close(self) -> None:
        for run in self.runs.values():
            run.finish()
        self.runs.clear()
