"""Two or more models' compositionality ranks records side by side, for paired comparisons
(clipeval.tasks.compositionality)."""

import numpy as np

from clipeval.compositionality.metrics import compositionality_statistic, group_samples
from clipeval.statistics.pairing import require_same


def check_pairable(first: dict, second: dict, second_path) -> None:
    require_same(first, second, second_path, ("groups", "example_ids", "group_of"), "examples")


def stacked_samples(records: list[dict]) -> tuple[dict, list]:
    """Each group's examples with every model's outcomes side by side, and each model's statistic over them."""
    first = records[0]
    parts = [group_samples(record)["examples"] for record in records]
    samples = {"examples": [np.column_stack(groups) for groups in zip(*parts)]}
    macro = first.get("macro_groups")
    return samples, [compositionality_statistic(first["groups"], i, macro) for i in range(len(records))]
