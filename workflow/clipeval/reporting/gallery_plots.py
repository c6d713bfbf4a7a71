"""The failure gallery's figures: thumbnails from the dataset's image LMDB, captions as text.

Thumbnails are downscaled to `thumbnail` pixels on their long side before
they are drawn, so a gallery's size depends on how many failures it shows,
not on the dataset's image sizes.
"""

import textwrap

import numpy as np

from clipeval.reporting import figures
from clipeval.reporting.failures import Failure

TEXT_WIDTH = 38  # characters per line of a caption


class Thumbnails:
    """Downscaled RGB images by id, read from an image LMDB once each."""

    def __init__(self, store, size: int):
        self.store, self.size, self.cache = store, size, {}

    def __call__(self, image_id: int):
        if image_id not in self.cache:
            image = self.store.image(image_id).convert("RGB")
            image.thumbnail((self.size, self.size))
            self.cache[image_id] = image
        return self.cache[image_id]


def _wrap(text: str, lines: int = 4, width: int = TEXT_WIDTH) -> str:
    return "\n".join(textwrap.wrap(text, width, max_lines=lines, placeholder=" …"))


def plot_text_to_image(title: str, failures: list[Failure], captions: dict[int, str], thumbnails, path) -> None:
    """Per failure: the caption, its correct image, and the images retrieved for it, correct ones framed."""
    shown = max(len(f.retrieved) for f in failures) if failures else 1
    figure, axes = figures.new_figure(2.0 * (shown + 2.6), 2.1 * max(len(failures), 1), max(len(failures), 1),
                                      shown + 2, gridspec_kw={"width_ratios": [2.6, 1] + [1] * shown})
    for row, failure in enumerate(failures):
        cells = axes[row]
        figures.text_cell(cells[0], [(_wrap(captions[failure.query_id]), "black"),
                                     (f"text_id {failure.query_id}", "#555555"),
                                     (f"correct image at rank {failure.rank}", figures.WRONG)])
        correct = failure.positives[0]
        figures.image_cell(cells[1], thumbnails(correct), f"correct: {correct}", frame=figures.CORRECT)
        for column, (image_id, score) in enumerate(zip(failure.retrieved, failure.scores)):
            hit = image_id in failure.positives
            figures.image_cell(cells[2 + column], thumbnails(image_id), f"#{column + 1}  {score:.3f}",
                               frame=figures.CORRECT if hit else None,
                               title_colour=figures.CORRECT if hit else "black")
        for cell in cells[2 + len(failure.retrieved):]:
            cell.set_axis_off()
    if not failures:
        axes[0][0].set_axis_off()
    figure.suptitle(title, fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)


def plot_image_to_text(title: str, failures: list[Failure], captions: dict[int, str],
                       captions_of_image: dict[int, list[int]], thumbnails, path) -> None:
    """Per failure: the image, its own captions, and the captions retrieved for it, correct ones in green."""
    shown = max(len(f.retrieved) for f in failures) if failures else 1
    rows = max(len(failures), 1)
    figure, axes = figures.new_figure(15, 0.35 * max(shown, 5) * rows + 0.8, rows, 3,
                                      gridspec_kw={"width_ratios": [1, 3, 4]})
    for row, failure in enumerate(failures):
        cells = axes[row]
        figures.image_cell(cells[0], thumbnails(failure.query_id),
                           f"image {failure.query_id}\nfirst correct at rank {failure.rank}", title_colour=figures.WRONG)
        own = captions_of_image[failure.query_id][:5]
        figures.text_cell(cells[1], [("its captions:", "#555555")] +
                          [(f"• {_wrap(captions[text_id], 1, 60)}", figures.CORRECT) for text_id in own])
        figures.text_cell(cells[2], [("retrieved:", "#555555")] + [
            (f"#{place + 1}  {score:.3f}  {_wrap(captions[text_id], 1, 70)}",
             figures.CORRECT if text_id in failure.positives else "black")
            for place, (text_id, score) in enumerate(zip(failure.retrieved, failure.scores))])
    if not failures:
        for cell in axes[0]:
            cell.set_axis_off()
    figure.suptitle(title, fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)


def plot_confusion(title: str, confusion: np.ndarray, classnames: list[str], path) -> None:
    """The confusion matrix as a heat map of each true class's share, counts written in small matrices."""
    classes = len(classnames)
    support = confusion.sum(axis=1, keepdims=True)
    shares = 100.0 * confusion / np.maximum(support, 1)
    side = min(max(4.5, 0.45 * classes + 2), 30)
    figure, axes = figures.new_figure(side + 1.5, side)
    axis = axes[0][0]
    axis.grid(False)
    picture = axis.imshow(shares, cmap="viridis", vmin=0, vmax=100)
    colourbar = figure.colorbar(picture, ax=axis, fraction=0.046, pad=0.04)
    colourbar.set_label("% of the true class's images")
    if classes <= 40:
        axis.set_xticks(np.arange(classes), labels=classnames, rotation=45, ha="right")
        axis.set_yticks(np.arange(classes), labels=classnames)
    if classes <= 12:
        for true in range(classes):
            for guess in range(classes):
                axis.text(guess, true, str(confusion[true, guess]), ha="center", va="center", fontsize=9,
                          color="white" if shares[true, guess] < 60 else "black")
    axis.set_xlabel("predicted class")
    axis.set_ylabel("true class")
    axis.set_title(title, fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)


def plot_confused_pairs(title: str, pairs: list[tuple[int, int, int]], examples: list[list[int]],
                        classnames: list[str], support: np.ndarray, thumbnails, path) -> None:
    """Per confused pair: which class was taken for which, how often, and example images."""
    shown = max([len(e) for e in examples] + [1])
    rows = max(len(pairs), 1)
    figure, axes = figures.new_figure(2.0 * (shown + 2), 2.0 * rows, rows, shown + 1,
                                      gridspec_kw={"width_ratios": [2] + [1] * shown})
    for row, ((true, guess, count), ids) in enumerate(zip(pairs, examples)):
        cells = axes[row]
        figures.text_cell(cells[0], [(f"true: {classnames[true]}", figures.CORRECT),
                                     (f"predicted: {classnames[guess]}", figures.WRONG),
                                     (f"{count} of {int(support[true])} images", "black")], fontsize=10)
        for column, image_id in enumerate(ids):
            figures.image_cell(cells[1 + column], thumbnails(image_id), f"image {image_id}")
        for cell in cells[1 + len(ids):]:
            cell.set_axis_off()
    if not pairs:
        for cell in axes[0]:
            cell.set_axis_off()
        axes[0][0].text(0, 0.5, "no image was misclassified", transform=axes[0][0].transAxes)
    figure.suptitle(title, fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)
