"""The report's forest plot: one dataset's paired comparisons, each difference with its 95% interval."""

import numpy as np

from clipeval.reporting import figures
from clipeval.reporting.summary import comparison_rows, rows_settings
from clipeval.tasks import TASKS


def plot_forest(dataset: str, comparisons: list[dict], task: str, path) -> None:
    """Each pair's difference (first − second) per headline metric, with its paired 95% interval."""
    by_pair = [{row["metric"]: row for row in comparison_rows(c, dataset)} for c in comparisons]
    settings = rows_settings([row for rows in by_pair for row in rows.values()], TASKS[task].settings)
    shown = TASKS[task].compared_metrics(settings, with_rsum=False)
    # A metric no pair has a difference of (a multi-label set's top-1) gets no empty panel.
    metrics = [
        (metric.column, metric.label)
        for metric in shown
        if metric.column in by_pair[0] and any(rows[metric.column]["difference"] is not None for rows in by_pair)
    ]
    pairs = [f"{c['models'][0]} − {c['models'][1]}" for c in comparisons]
    figure, axes = figures.new_figure(4 * len(metrics), 1.4 + 0.5 * len(pairs), 1, len(metrics), sharey=True)
    rows = []
    for axis, (column, label) in zip(axes[0], metrics):
        for position, (pair, values) in enumerate(zip(pairs, by_pair)):
            row = values[column]
            difference = row["difference"]
            if difference is None:
                continue
            low, high = row["ci_low"], row["ci_high"]
            colour = (
                figures.CORRECT
                if low is not None and low > 0
                else figures.WRONG
                if high is not None and high < 0
                else "#404040"
            )
            if low is not None:
                axis.errorbar(
                    difference,
                    position,
                    xerr=[[difference - low], [high - difference]],
                    fmt="o",
                    color=colour,
                    capsize=4,
                    markersize=6,
                )
            else:
                axis.plot(difference, position, "o", color=colour)
            rows.append([pair, column, difference, "" if low is None else low, "" if high is None else high])
        axis.axvline(0, color="black", linewidth=1)
        axis.set_title(label)
        axis.set_xlabel("difference (percentage points)")
    axes[0][0].set_yticks(np.arange(len(pairs)), labels=pairs)
    axes[0][0].invert_yaxis()
    figure.suptitle(f"{dataset}: paired differences, 95% intervals", fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
    figures.write_csv(figures.data_path(path), ["pair", "metric", "difference", "ci_low", "ci_high"], rows)
