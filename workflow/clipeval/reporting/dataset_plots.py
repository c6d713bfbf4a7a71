"""The report's figures of one dataset, every model of the experiment in each.

Retrieval: recall@K curves and the distribution of the first correct item's
rank, per direction, from the ranks records. Classification: recall per
class, from the metrics files. Each figure's numbers go to a CSV beside it
(figures.data_path).
"""

import numpy as np

from clipeval.reporting import figures
from clipeval.reporting.rank_curves import MAX_K, bin_label, rank_histogram, recall_curve
from clipeval.retrieval.directions import DIRECTIONS

DIRECTION_TITLES = {"t2i": "text → image", "i2t": "image → text"}
# At most this many classes in the per-class bars: beyond it, the hardest ones.
MAX_CLASS_BARS = 40


def plot_recall_curves(dataset: str, records: dict[str, dict], path) -> None:
    """records: {model: retrieval ranks record}, in config order."""
    colours = figures.model_colours(list(records))
    figure, axes = figures.new_figure(11, 4.2, 1, 2, sharey=True)
    rows = []
    for axis, direction in zip(axes[0], DIRECTIONS):
        for model, record in records.items():
            ranks = np.asarray(record[direction]["ranks"])
            curve = recall_curve(ranks, np.asarray(record[direction]["folds"]), MAX_K)
            ks = np.arange(1, MAX_K + 1)
            axis.plot(ks, curve, color=colours[model], label=model, linewidth=2)
            rows += [[model, direction, int(k), float(value)] for k, value in zip(ks, curve)]
        axis.set_xscale("log")
        axis.set_xlim(1, MAX_K)
        axis.set_ylim(0, 100)
        axis.set_xticks([1, 5, 10, 50, 100], labels=["1", "5", "10", "50", "100"])
        axis.set_xlabel("K (log scale)")
        axis.set_title(f"{DIRECTION_TITLES[direction]}")
    axes[0][0].set_ylabel("recall@K (% of queries)")
    axes[0][1].legend(loc="lower right", title="model")
    figure.suptitle(f"{dataset}: recall@K", fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
    figures.write_csv(figures.data_path(path), ["model", "direction", "k", "recall"], rows)


def plot_rank_distribution(dataset: str, records: dict[str, dict], path) -> None:
    """The share of queries whose first correct item sits in each rank bin, bars per model."""
    colours = figures.model_colours(list(records))
    figure, axes = figures.new_figure(11, 4.2, 1, 2, sharey=True)
    rows = []
    width = 0.8 / max(len(records), 1)
    for axis, direction in zip(axes[0], DIRECTIONS):
        worst = max(int(max(record[direction]["ranks"])) for record in records.values())
        labels = None
        for index, (model, record) in enumerate(records.items()):
            ranks = np.asarray(record[direction]["ranks"])
            bins = rank_histogram(ranks, worst)
            shares = [100.0 * count / len(ranks) for _, _, count in bins]
            labels = [bin_label(start, stop) for start, stop, _ in bins]
            positions = np.arange(len(bins)) + (index - (len(records) - 1) / 2) * width
            axis.bar(positions, shares, width=width, color=colours[model], label=model)
            rows += [
                [model, direction, start, "" if stop is None else stop, count, share]
                for (start, stop, count), share in zip(bins, shares)
            ]
        axis.set_xticks(np.arange(len(labels)), labels=labels, rotation=45, ha="right")
        axis.set_xlabel("rank of the first correct item")
        axis.set_title(DIRECTION_TITLES[direction])
    axes[0][0].set_ylabel("% of queries")
    axes[0][1].legend(loc="upper right", title="model")
    figure.suptitle(f"{dataset}: where the correct item ranks", fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
    figures.write_csv(
        figures.data_path(path), ["model", "direction", "rank_from", "rank_to", "queries", "percent"], rows
    )


# What a class's bar shows: a single-label set's recall, or a multi-label set's average precision.
CLASS_VALUES = {
    "recall": ("recall per class", "recall (% of the class's images classified as it)"),
    "average_precision": ("average precision per class", "average precision (%)"),
}


def shown_classes(per_class: dict[str, dict[str, dict]], value: str = "recall") -> list[str]:
    """Every class with images, or the MAX_CLASS_BARS with the lowest mean `value` over models (ties by name)."""
    first = next(iter(per_class.values()))
    names = [name for name, entry in first.items() if entry[value] is not None]
    if len(names) <= MAX_CLASS_BARS:
        return names
    mean = {name: np.mean([metrics[name][value] for metrics in per_class.values()]) for name in names}
    return sorted(sorted(names, key=lambda name: (mean[name], name))[:MAX_CLASS_BARS], key=names.index)


def plot_class_recall(dataset: str, per_class: dict[str, dict[str, dict]], path, value: str = "recall") -> None:
    """per_class: {model: the per_class entry of its classification.json}; `value` one of CLASS_VALUES."""
    title, xlabel = CLASS_VALUES[value]
    colours = figures.model_colours(list(per_class))
    names = shown_classes(per_class, value)
    height = 0.8 / max(len(per_class), 1)
    figure, axes = figures.new_figure(9, 1.2 + 0.3 * len(names) * max(1, len(per_class) / 2))
    axis = axes[0][0]
    for index, (model, classes) in enumerate(per_class.items()):
        values = [classes[name][value] for name in names]
        positions = np.arange(len(names)) + (index - (len(per_class) - 1) / 2) * height
        axis.barh(positions, values, height=height, color=colours[model], label=model)
    axis.set_yticks(np.arange(len(names)), labels=names)
    axis.invert_yaxis()
    axis.set_xlim(0, 100)
    axis.set_xlabel(xlabel)
    hidden = len(next(iter(per_class.values()))) - len(names)
    title = f"{dataset}: {title}" + (f" (the {len(names)} hardest; {hidden} more in the CSV)" if hidden else "")
    axis.set_title(title, fontweight="bold")
    axis.legend(loc="lower right", title="model")
    figure.tight_layout()
    figures.save_figure(figure, path)
    all_rows = [
        [model, name, entry[value], entry["support"]]
        for model, classes in per_class.items()
        for name, entry in classes.items()
    ]
    figures.write_csv(figures.data_path(path), ["model", "class", value, "images"], all_rows)
