"""The report's figures, drawn with matplotlib: one look for all of them, saved reproducibly.

Each model keeps one colour in every figure of an experiment (its place in
the config's model order), so a reader can follow it from plot to plot.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from clipeval.storage.atomic import atomic_output  # noqa: E402

STYLE = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
plt.rcParams.update(STYLE)
# Colour-blind-safe and distinct in print (matplotlib's tab10).
PALETTE = plt.get_cmap("tab10").colors
DPI = 100
CORRECT = "#1a9850"
WRONG = "#d73027"


def model_colours(models: list[str]) -> dict[str, tuple]:
    return {model: PALETTE[index % len(PALETTE)] for index, model in enumerate(models)}


def new_figure(width: float, height: float, rows: int = 1, columns: int = 1, **options):
    return plt.subplots(rows, columns, figsize=(width, height), squeeze=False, **options)


def save_figure(figure, path) -> None:
    """PNG with no timestamp or version in its metadata: the same data gives the same bytes."""
    with atomic_output(path) as temporary:
        figure.savefig(temporary, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(figure)


def image_cell(axis, image, title: str = "", frame: str | None = None, title_colour="black") -> None:
    """One thumbnail in a grid cell: no ticks, an optional coloured frame and a small title."""
    axis.imshow(np.asarray(image))
    axis.set_xticks([])
    axis.set_yticks([])
    axis.grid(False)
    for spine in axis.spines.values():
        spine.set_visible(frame is not None)
        if frame is not None:
            spine.set_edgecolor(frame)
            spine.set_linewidth(4)
    if title:
        axis.set_title(title, fontsize=9, color=title_colour)


def text_cell(axis, lines: list[tuple[str, str]], fontsize: float = 9) -> None:
    """Lines of (text, colour) in an empty grid cell, top to bottom."""
    axis.set_axis_off()
    step = 1.0 / max(len(lines), 1)
    for row, (text, colour) in enumerate(lines):
        axis.text(0.0, 1.0 - row * step, text, va="top", ha="left", fontsize=fontsize, color=colour,
                  transform=axis.transAxes, wrap=True)


def write_csv(path, header: list[str], rows: list[list]) -> None:
    """The numbers a figure shows, beside it, for checking and for re-plotting."""
    import csv

    with atomic_output(path) as temporary:
        with open(temporary, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            writer.writerows([[round(v, 6) if isinstance(v, float) else v for v in row] for row in rows])


def data_path(figure_path) -> Path:
    return Path(figure_path).with_suffix(".csv")
