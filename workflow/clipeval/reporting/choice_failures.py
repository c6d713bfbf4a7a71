"""The report's failure gallery of a compositionality set: examples a model got wrong, each image with the
caption it chose and the right one, and for two-image examples the image each caption chose; for an example
with associations (WinoGAViL's), the images its caption chose that are not among them.

Failures are taken in the record's example order, one group after another in
turn (SugarCrepe's splits, Winoground's tags), so that every group with a
failure shows one before any shows a second.
"""

import textwrap

from clipeval.compositionality.metrics import NOT_DEFINED, OUTCOMES
from clipeval.reporting import figures
from clipeval.reporting.gallery_plots import CELL, GAP
from clipeval.reporting.sheet import Sheet

TEXT_COLUMN = 6.0
WIDTH = 60  # characters per line of a caption


def is_wrong(record: dict, index: int) -> bool:
    """A wrong choice of caption or image; for an example with associations, a chosen image not among them."""
    counts = record.get("chosen_associations")
    if counts and counts[index][1] != NOT_DEFINED:
        return counts[index][0] < counts[index][1]
    return 0 in record["outcomes"][index][: len(OUTCOMES) - 1]


def failed_examples(record: dict, count: int) -> list[int]:
    """Positions in the record of up to `count` examples with a wrong choice, the groups taking turns."""
    wrong = [index for index in range(len(record["outcomes"])) if is_wrong(record, index)]
    by_group = {}
    for index in wrong:
        by_group.setdefault(record["group_of"][index], []).append(index)
    chosen, queues = [], [queue for _, queue in sorted(by_group.items())]
    while len(chosen) < count and any(queues):
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=lambda index: (record["group_of"][index], index))


def failure_lines(example, choices, captions: dict[int, str]) -> list[tuple[str, str]]:
    """(text, colour) lines: what each image chose and, where wrong, the right caption; then each caption's
    choice of image where the example has two images or more."""

    def wrap(text):
        return "\n".join(textwrap.wrap(text, WIDTH, max_lines=2, placeholder=" …"))

    if "associations" in example:
        right = example["associations"]
        cue = f"caption {example['text_ids'][0]}: " + wrap(captions[example["text_ids"][0]])
        chose = f"chose images {' '.join(map(str, choices['images']))} (right: {' '.join(map(str, right))})"
        return [(cue, "black"), (chose, figures.WRONG)]
    lines = []
    for j, (image_id, chosen) in enumerate(zip(example["image_ids"], choices["texts"])):
        right = example["text_ids"][j]
        colour = figures.CORRECT if chosen == right else figures.WRONG
        lines.append((f"image {image_id} chose: " + wrap(captions[chosen]), colour))
        if chosen != right:
            lines.append(("  right: " + wrap(captions[right]), figures.CORRECT))
    for j, chosen in enumerate(choices["images"]):
        right = example["image_ids"][j]
        colour = figures.CORRECT if chosen == right else figures.WRONG
        lines.append((f"caption {example['text_ids'][j]} chose image {chosen} (right: {right})", colour))
    return lines


def plot_choice_failures(title: str, record: dict, examples: dict[int, dict], captions, thumbnails, count, path):
    """The gallery of up to `count` failed examples; its rows as a CSV beside it."""
    shown = failed_examples(record, count)
    most_images = max([len(examples[record["example_ids"][i]]["image_ids"]) for i in shown] + [1])
    row_height = CELL + GAP + 0.4
    sheet = Sheet(most_images * (CELL + GAP) + TEXT_COLUMN, row_height * max(len(shown), 1), title)
    rows = []
    for row, index in enumerate(shown):
        example_id = record["example_ids"][index]
        example, choices = examples[example_id], record["choices"][index]
        top = row * row_height + GAP
        for j, image_id in enumerate(example["image_ids"]):
            sheet.image(j * (CELL + GAP) + 0.1, top, CELL, thumbnails(image_id), f"image {image_id}")
        group = record["groups"][record["group_of"][index]]
        lines = [(f"{group}: example {example_id}", "black"), *failure_lines(example, choices, captions)]
        sheet.lines(most_images * (CELL + GAP) + 0.2, top, lines)
        rows.append(
            [
                example_id,
                group,
                " ".join(map(str, choices["texts"])),
                " ".join(map(str, example["text_ids"])),
                " ".join(map(str, choices["images"])),
                " ".join(map(str, example.get("associations", []))),
            ]
        )
    if not shown:
        sheet.lines(0.2, GAP, [("no example was answered wrongly", "black")])
    sheet.save(path)
    header = [
        "example_id",
        "group",
        "chosen text_ids",
        "example text_ids (the images' own first)",
        "chosen image_ids",
        "associations",
    ]
    figures.write_csv(figures.data_path(path), header, rows)
