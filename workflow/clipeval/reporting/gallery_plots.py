"""The failure gallery's figures: thumbnails from the dataset's image LMDB, captions as text.

Thumbnails are downscaled to `thumbnail` pixels on their long side before
they are drawn, so a gallery's size depends on how many failures it shows,
not on the dataset's image sizes.
"""

import textwrap

import numpy as np

from clipeval.reporting import figures
from clipeval.reporting.failures import Failure
from clipeval.reporting.sheet import Sheet

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


# Gallery geometry, in inches.
CELL = 1.7  # a thumbnail's square
GAP = 0.3  # between cells, room for a thumbnail's title
TEXT_COLUMN = 3.4  # a query's caption beside its pictures
ROW = CELL + GAP + 0.1


def plot_text_to_image(title: str, failures: list[Failure], captions: dict[int, str], thumbnails, path) -> None:
    """Per failure: the caption, its correct image, and the images retrieved for it, correct ones framed."""
    shown = max([len(f.retrieved) for f in failures] + [1])
    sheet = Sheet(TEXT_COLUMN + (shown + 1) * (CELL + GAP), ROW * max(len(failures), 1), title)
    for row, failure in enumerate(failures):
        top = row * ROW + GAP
        sheet.lines(
            0.15,
            top,
            [
                (_wrap(captions[failure.query_id]), "black"),
                (f"text_id {failure.query_id}", "#555555"),
                (f"correct image at rank {failure.rank}", figures.WRONG),
            ],
        )
        correct = failure.positives[0]
        sheet.image(TEXT_COLUMN, top, CELL, thumbnails(correct), f"correct: {correct}", frame=figures.CORRECT)
        for column, (image_id, score) in enumerate(zip(failure.retrieved, failure.scores)):
            hit = image_id in failure.positives
            sheet.image(
                TEXT_COLUMN + (column + 1) * (CELL + GAP),
                top,
                CELL,
                thumbnails(image_id),
                f"#{column + 1}  {score:.3f}",
                frame=figures.CORRECT if hit else None,
                title_colour=figures.CORRECT if hit else "black",
            )
    sheet.save(path)


def plot_image_to_text(
    title: str,
    failures: list[Failure],
    captions: dict[int, str],
    captions_of_image: dict[int, list[int]],
    thumbnails,
    path,
) -> None:
    """Per failure: the image, its own captions, and the captions retrieved for it, correct ones in green."""
    shown = max([len(f.retrieved) for f in failures] + [1])
    title_room = 2 * GAP  # the image's title has two lines
    row_height = max(CELL + title_room + 0.1, 0.22 * (shown + 1) + title_room)
    own_left, retrieved_left = CELL + 0.6, CELL + 5.8
    sheet = Sheet(15, row_height * max(len(failures), 1), title)
    for row, failure in enumerate(failures):
        top = row * row_height + title_room
        sheet.image(
            0.2,
            top,
            CELL,
            thumbnails(failure.query_id),
            f"image {failure.query_id}\nfirst correct at rank {failure.rank}",
            title_colour=figures.WRONG,
        )
        own = captions_of_image[failure.query_id][:5]
        sheet.lines(
            own_left,
            top,
            [("its captions:", "#555555")]
            + [(f"• {_wrap(captions[text_id], 1, 60)}", figures.CORRECT) for text_id in own],
        )
        sheet.lines(
            retrieved_left,
            top,
            [("retrieved:", "#555555")]
            + [
                (
                    f"#{place + 1}  {score:.3f}  {_wrap(captions[text_id], 1, 70)}",
                    figures.CORRECT if text_id in failure.positives else "black",
                )
                for place, (text_id, score) in enumerate(zip(failure.retrieved, failure.scores))
            ],
        )
    sheet.save(path)


def plot_confusion(title: str, confusion: np.ndarray, classnames: list[str], path, support=None) -> None:
    """The confusion matrix as a heat map of each true class's share, counts written in small matrices. support:
    each class's images, where they are not its row's sum (a multi-label set's: classification/multilabel.py)."""
    classes = len(classnames)
    support = confusion.sum(axis=1) if support is None else np.asarray(support)
    shares = 100.0 * confusion / np.maximum(support[:, None], 1)
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
                axis.text(
                    guess,
                    true,
                    str(confusion[true, guess]),
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if shares[true, guess] < 60 else "black",
                )
    axis.set_xlabel("predicted class")
    axis.set_ylabel("true class")
    axis.set_title(title, fontweight="bold")
    figure.tight_layout()
    figures.save_figure(figure, path)


def plot_confused_pairs(
    title: str,
    pairs: list[tuple[int, int, int]],
    examples: list[list[int]],
    classnames: list[str],
    support: np.ndarray,
    thumbnails,
    path,
) -> None:
    """Per confused pair: which class was taken for which, how often, and example images."""
    shown = max([len(e) for e in examples] + [1])
    text_column = 3.0
    sheet = Sheet(text_column + shown * (CELL + GAP), ROW * max(len(pairs), 1), title)
    for row, ((true, guess, count), ids) in enumerate(zip(pairs, examples)):
        top = row * ROW + GAP
        sheet.lines(
            0.15,
            top,
            [
                (f"true: {classnames[true]}", figures.CORRECT),
                (f"predicted: {classnames[guess]}", figures.WRONG),
                (f"{count} of {int(support[true])} images", "black"),
            ],
            fontsize=10,
        )
        for column, image_id in enumerate(ids):
            sheet.image(text_column + column * (CELL + GAP), top, CELL, thumbnails(image_id), f"image {image_id}")
    if not pairs:
        sheet.lines(0.15, GAP, [("no image was misclassified", "black")], fontsize=10)
    sheet.save(path)
