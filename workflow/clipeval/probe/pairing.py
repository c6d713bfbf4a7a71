"""Two or more models' linear-probe ranks records side by side, for paired comparisons (clipeval.tasks.probe)."""

import numpy as np

from clipeval.probe.metrics import probe_samples, probe_statistic
from clipeval.statistics.pairing import require_same


def check_pairable(first: dict, second: dict, second_path) -> None:
    require_same(
        first, second, second_path, ("image_ids", "labels", "num_classes", "shots", "seeds"), "images or shots"
    )


def stacked_samples(records: list[dict]) -> tuple[dict, list]:
    """The labels, then each model's predictions (a column per shots and seed), model after model; and each
    model's statistic over them."""
    first = records[0]
    parts = [probe_samples(record)["images"][0] for record in records]
    rows = np.column_stack([parts[0], *(part[:, 1:] for part in parts[1:])])
    width = parts[0].shape[1] - 1
    shots, seeds, num_classes = first["shots"], first["seeds"], first["num_classes"]
    return {"images": [rows]}, [probe_statistic(shots, seeds, num_classes, 1 + i * width) for i in range(len(records))]
