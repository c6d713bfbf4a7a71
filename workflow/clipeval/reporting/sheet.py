"""A figure laid out by hand in inches: thumbnails and text on one set of axes.

The failure galleries are grids of many small pictures and captions. Drawn as
one matplotlib axes per cell with tight_layout, most of a gallery's time went
to building, laying out and drawing the cells' axes (ticks, spines, layout
solving), none of which shows. Here every picture and line of text is placed
on one axes spanning the figure, so only they are drawn.
Coordinates are inches from the top-left corner.
"""

import numpy as np
from matplotlib.patches import Rectangle

from clipeval.reporting import figures

TITLE_HEIGHT = 0.5  # inches above the first row, for the sheet's title
CAPTION_SIZE = 9


class Sheet:
    def __init__(self, width: float, height: float, title: str):
        self.figure, axes = figures.new_figure(width, height + TITLE_HEIGHT)
        self.axis = axes[0][0]
        self.figure.subplots_adjust(left=0, right=1, bottom=0, top=1)
        self.axis.set_axis_off()
        self.axis.set_xlim(0, width)
        self.axis.set_ylim(height + TITLE_HEIGHT, 0)
        self.axis.set_autoscale_on(False)  # pictures placed later must not move the limits
        self.axis.text(
            width / 2,
            TITLE_HEIGHT / 2,
            title,
            ha="center",
            va="center",
            fontweight="bold",
            fontsize=figures.STYLE["axes.titlesize"] + 1,
        )

    def _y(self, top: float) -> float:
        return top + TITLE_HEIGHT

    def image(
        self,
        left: float,
        top: float,
        size: float,
        image,
        title: str = "",
        frame: str | None = None,
        title_colour: str = "black",
    ) -> None:
        """`image` fitted into a size × size square (aspect kept), a coloured frame and a title above it."""
        pixels = np.asarray(image)
        height, width = pixels.shape[:2]
        scale = size / max(height, width)
        drawn_width, drawn_height = width * scale, height * scale
        x0 = left + (size - drawn_width) / 2
        y0 = self._y(top) + (size - drawn_height) / 2
        self.axis.imshow(pixels, extent=(x0, x0 + drawn_width, y0 + drawn_height, y0), aspect="auto")
        if frame is not None:
            self.axis.add_patch(
                Rectangle((x0, y0), drawn_width, drawn_height, fill=False, edgecolor=frame, linewidth=4)
            )
        if title:
            self.axis.text(
                left + size / 2, y0 - 0.05, title, ha="center", va="bottom", fontsize=CAPTION_SIZE, color=title_colour
            )

    def lines(self, left: float, top: float, lines: list[tuple[str, str]], fontsize: float = CAPTION_SIZE) -> None:
        """Blocks of (text, colour) from (left, top) down, one under the other (a block may hold newlines)."""
        line_height = fontsize / 72 * 1.35
        for text, colour in lines:
            self.axis.text(left, self._y(top), text, ha="left", va="top", fontsize=fontsize, color=colour)
            top += line_height * (text.count("\n") + 1) + line_height / 3

    def save(self, path) -> None:
        figures.save_figure(self.figure, path)
