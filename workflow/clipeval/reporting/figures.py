"""The report's figures, drawn with matplotlib: one look for all of them, saved reproducibly.

Each model keeps one colour in every figure of an experiment (its place in
the config's model order), so a reader can follow it from plot to plot.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from clipeval.reporting.fonts import font_families  # noqa: E402
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
    # Captions and class names are data: "$5 and $10" is drawn as written, never read as math.
    "text.parse_math": False,
    "font.family": font_families(),
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
