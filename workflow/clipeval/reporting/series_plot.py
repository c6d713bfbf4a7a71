"""The report's figure of a checkpoint series: each dataset's main metric over the steps, with its 95% interval,
the best checkpoint marked."""

import csv

from clipeval.errors import ClipevalError
from clipeval.reporting import figures
from clipeval.reporting.series_table import SERIES_COLUMNS
from clipeval.tasks import METRIC_LABEL


def read_series_table(path, series: str) -> list[dict]:
    """The rows of one series from the summary's series.csv, numbers as numbers."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != SERIES_COLUMNS:
            raise ClipevalError(f"{path}: not a series table (the summary writes one: {', '.join(SERIES_COLUMNS)})")
        rows = [row for row in reader if row["series"] == series]
    if not rows:
        raise ClipevalError(f"{path}: no rows of series {series!r}")

    def number(text):
        return float(text) if text else None

    return [
        {
            **row,
            "step": int(row["step"]),
            "value": number(row["value"]),
            "ci_low": number(row["ci_low"]),
            "ci_high": number(row["ci_high"]),
            "best": row["best"] == "yes",
        }
        for row in rows
    ]


def plot_series(series: str, rows: list[dict], path) -> None:
    """A panel per dataset: the main metric at each step, its interval as a band, the best step circled."""
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    figure, axes = figures.new_figure(4.5 * len(datasets), 3.6, 1, len(datasets))
    for axis, dataset in zip(axes[0], datasets):
        members = [row for row in rows if row["dataset"] == dataset and row["value"] is not None]
        steps = [row["step"] for row in members]
        axis.plot(steps, [row["value"] for row in members], "o-", color=figures.PALETTE[0], markersize=4)
        bounded = [row for row in members if row["ci_low"] is not None]
        if bounded:
            axis.fill_between(
                [row["step"] for row in bounded],
                [row["ci_low"] for row in bounded],
                [row["ci_high"] for row in bounded],
                color=figures.PALETTE[0],
                alpha=0.2,
                linewidth=0,
            )
        for row in members:
            if row["best"]:
                axis.plot(
                    row["step"],
                    row["value"],
                    "o",
                    markersize=12,
                    fillstyle="none",
                    color=figures.CORRECT,
                    label=f"best: step {row['step']}",
                )
                axis.legend(loc="best")
        axis.set_title(dataset)
        axis.set_xlabel("step")
        if members:
            axis.set_ylabel(f"{METRIC_LABEL[members[0]['metric']]} (%)")
    figure.suptitle(f"{series}: the main metric by checkpoint, 95% intervals", fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
    header = ["dataset", "step", "model", "metric", "value", "ci_low", "ci_high", "best"]
    figures.write_csv(
        figures.data_path(path),
        header,
        [[row[key] if row[key] is not None else "" for key in header] for row in rows],
    )
