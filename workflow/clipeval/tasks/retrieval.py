"""Image–text retrieval: each caption ranks the images and each image the captions (clipeval.retrieval)."""

from clipeval.metric_catalog import (
    DEFAULT_RECALL_AT,
    DIRECTIONS,
    RANKING_METRICS,
    Metric,
    has_rsum,
    ranking_key,
    recall_key,
    retrieval_metrics,
)
from clipeval.tasks import Task


def _metrics(settings: dict) -> list[Metric]:
    return retrieval_metrics(settings.get("recall_at") or DEFAULT_RECALL_AT, settings.get("ranking_at") or ())


def _table(settings: dict) -> list[Metric]:
    """Each direction's R@K, median rank and ranking metrics, then Rsum and mean recall where defined."""
    ks, ranking_at = settings.get("recall_at") or DEFAULT_RECALL_AT, settings.get("ranking_at") or ()
    metrics = {metric.column: metric for metric in retrieval_metrics(ks, ranking_at)}
    shown = []
    for direction in DIRECTIONS:
        shown += [metrics[f"{direction}_{recall_key(k)}"] for k in ks] + [metrics[f"{direction}_median_rank"]]
        shown += [metrics[f"{direction}_{ranking_key(name, k)}"] for k in ranking_at for name in RANKING_METRICS]
    return shown + [metrics[column] for column in ("rsum", "mean_recall") if column in metrics]


def _compared(settings: dict, with_rsum: bool) -> list[Metric]:
    """Each direction's smallest R@K and, where defined, Rsum and mean recall."""
    ks = settings.get("recall_at") or DEFAULT_RECALL_AT
    first = recall_key(min(ks))
    shown = [Metric(f"{d}_{first}", f"{group.replace(' ', '')} {first}") for d, group in DIRECTIONS.items()]
    if has_rsum(ks):
        shown += [Metric("rsum", "Rsum")] if with_rsum else []
        shown += [Metric("mean_recall", "mean recall")]
    return shown


TASK = Task(
    name="retrieval",
    order=0,
    title="Retrieval",
    table_title="Image–text retrieval",
    main_metric="mean_recall",
    main_metric_label="mean recall",
    metrics_for=_metrics,
    compared_for=_compared,
    table_for=_table,
    nested_under=tuple(DIRECTIONS),
    settings=("recall_at", "ranking_at"),
    row_fields={"protocol": "full"},  # score files from before the protocol was recorded are full ones
    counts=("texts",),
    record_keys=("protocol", "folds", "recall_at", "ranking_at", "t2i", "i2t"),
    captioned=True,
    precomputed_features="texts",
    figures=("recall_curves", "rank_distribution"),
    model_figures=("t2i_failures", "i2t_failures"),
    score_command="score-retrieval",
    pairing="clipeval.retrieval.pairing",
)
