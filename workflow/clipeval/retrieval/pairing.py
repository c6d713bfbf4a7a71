"""Two or more models' retrieval ranks records side by side, for paired comparisons (clipeval.tasks.retrieval)."""

import numpy as np

from clipeval.retrieval.directions import DIRECTIONS
from clipeval.retrieval.metrics import rank_samples, retrieval_statistic
from clipeval.statistics.pairing import require_same


def check_pairable(first: dict, second: dict, second_path) -> None:
    require_same(
        first, second, second_path, ("protocol", "folds", "recall_at", "ranking_at"), "protocol, folds or K values"
    )
    for direction in DIRECTIONS:
        require_same(first[direction], second[direction], second_path, ("query_ids", "folds"), f"{direction} queries")


def stacked_samples(records: list[dict]) -> tuple[dict, list]:
    """Each direction's folds with every model's ranks side by side, and each model's statistic over them."""
    first = records[0]
    parts = [rank_samples(record) for record in records]
    samples = {d: [np.column_stack(folds) for folds in zip(*(part[d] for part in parts))] for d in parts[0]}
    return samples, [retrieval_statistic(first["recall_at"], first["ranking_at"], i) for i in range(len(records))]
