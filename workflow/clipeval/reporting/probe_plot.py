"""The report's figure of a linear probe: each model's top-1 on the test split against the shots per class it
was fitted on, the mean over seeds with its 95% interval; `all` at the right.

Each model keeps its colour (its place in the config's order); the numbers are
the score files', so the figure shows what the summary's table by shots lists.
"""

import numpy as np

from clipeval.reporting import figures


def probe_points(scores: dict[str, dict]) -> list[list]:
    """[model, shots, top1, ci_low, ci_high, spread over seeds] rows, in each score file's shots order."""
    rows = []
    for model, metrics in scores.items():
        intervals = (metrics.get("intervals") or {}).get("shots", {})
        for shots, values in metrics["shots"].items():
            interval = intervals.get(shots, {}).get("top1")
            rows.append([model, shots, values["top1"], *(interval or (None, None)), values["top1_sd"]])
    return rows


def plot_probe(dataset: str, scores: dict[str, dict], path) -> None:
    models = list(scores)
    shots = list(next(iter(scores.values()))["shots"])
    colours = figures.model_colours(models)
    rows = probe_points(scores)
    figure, axes = figures.new_figure(max(6.5, 1.0 * len(shots) + 3.0), 4.2)
    axis = axes[0][0]
    for index, model in enumerate(models):
        mine = [row for row in rows if row[0] == model]
        positions = np.arange(len(shots)) + (index - (len(models) - 1) / 2) * 0.08
        values = [row[2] for row in mine]
        errors = [[v - row[3] for v, row in zip(values, mine)], [row[4] - v for v, row in zip(values, mine)]]
        bars = errors if all(row[3] is not None for row in mine) else None
        axis.errorbar(positions, values, yerr=bars, fmt="o-", color=colours[model], capsize=3, label=model)
    axis.set_xticks(np.arange(len(shots)), labels=shots)
    axis.set_xlabel("training images per class")
    axis.set_ylabel("top-1 on the test split (%)")
    axis.legend(loc="best", title="model")
    figure.suptitle(f"{dataset}: linear probe, mean over seeds, 95% intervals", fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
    header = ["model", "shots", "top1", "ci_low", "ci_high", "spread_over_seeds"]
    figures.write_csv(figures.data_path(path), header, [["" if v is None else v for v in row] for row in rows])
