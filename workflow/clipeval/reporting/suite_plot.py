"""The report's figure of a suite: each dataset's metric in the suite's average (its main metric, or its
benchmark's: suites.py) per model, with its 95% interval, and the suite's average at the right (for
Crossmodal-3600's languages, a figure per language).

Each model keeps its colour (its place in the suite's model order); the
values come from the score files, the average and its interval from the
suite's own file, so the figure shows what the summary lists.
"""

import numpy as np

from clipeval.published.benchmarks import MEAN_R1
from clipeval.published.check import LABELS, measured_value
from clipeval.reporting import figures
from clipeval.tasks import METRIC_LABEL


def suite_points(suite: dict, scores: dict[tuple[str, str], dict]) -> list[list]:
    """[model, dataset (or "average"), metric, value, ci_low, ci_high] rows, datasets in the suite's order."""
    rows = []
    for model in suite["models"]:
        for dataset in suite["datasets"]:
            metrics, metric = scores[model, dataset], suite["metrics"][dataset]
            # A mean of two directions' R@1 has no interval of its own in the score file.
            interval = None if metric == MEAN_R1 else measured_value(metrics.get("intervals") or {}, metric)
            rows.append([model, dataset, metric, measured_value(metrics, metric), *(interval or (None, None))])
        interval = (suite.get("intervals") or {}).get("averages", {}).get(model)
        rows.append([model, "average", "mean of the above", suite["averages"][model], *(interval or (None, None))])
    return rows


def plot_suite(suite: dict, scores: dict[tuple[str, str], dict], path) -> None:
    models, columns = suite["models"], [*suite["datasets"], "average"]
    colours = figures.model_colours(models)
    rows = suite_points(suite, scores)
    figure, axes = figures.new_figure(max(7.5, 1.1 * len(columns) + 2.5), 4.2)
    axis = axes[0][0]
    width = 0.8 / len(models)
    for index, model in enumerate(models):
        mine = [row for row in rows if row[0] == model]
        positions = np.arange(len(columns)) + (index - (len(models) - 1) / 2) * width
        for position, (_, _, _, value, low, high) in zip(positions, mine):
            if value is None:
                continue
            errors = [[value - low], [high - value]] if low is not None else None
            axis.errorbar(position, value, yerr=errors, fmt="o", color=colours[model], capsize=3, markersize=6)
        axis.plot([], [], "o", color=colours[model], label=model)
    axis.axvline(len(columns) - 1.5, color="#999999", linewidth=1)
    tasks = {METRIC_LABEL.get(metric, LABELS.get(metric, metric)) for metric in suite["metrics"].values()}
    axis.set_xticks(np.arange(len(columns)), labels=columns, rotation=30, ha="right")
    axis.set_ylabel(f"{' / '.join(sorted(tasks))} (%)")
    axis.legend(loc="best", title="model")
    figure.suptitle(f"suite {suite['suite']}: main metric per dataset, 95% intervals", fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
    header = ["model", "dataset", "metric", "value", "ci_low", "ci_high"]
    figures.write_csv(figures.data_path(path), header, [["" if v is None else v for v in row] for row in rows])
