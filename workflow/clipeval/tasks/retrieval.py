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
from clipeval.tasks import ReportJob, Task, gallery_options


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


def _scored_with(config: dict, entry: dict) -> dict:
    """Every metrics setting, with the dataset's own protocol where it names one, and knn's depth."""
    metrics = {**config["metrics"], "protocol": entry.get("protocol", config["metrics"]["protocol"])}
    return {"metrics": metrics, "knn": {"top_k": config["knn"]["top_k"]}}


def _score_options(settings: dict) -> list[str]:
    metrics = settings["metrics"]
    return [
        *("--protocol", metrics["protocol"]),
        *("--recall-at", *(str(k) for k in metrics["recall_at"])),
        *("--ranking-at", *(str(k) for k in metrics["ranking_at"])),
        *(["--allow-queries-without-positive"] if metrics["allow_queries_without_positive"] else []),
    ]


def _checks_predictions(settings: dict) -> bool:
    """Folds rank within each fold; full-gallery top-k lists cannot be checked against that."""
    return settings["metrics"]["protocol"] == "full"


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
    headline_block="retrieval_headline",
    report_jobs=(
        ReportJob(
            "plot_retrieval",
            "plot-dataset",
            {
                "recall_curves": ("--recall-curves", "recall@K curves"),
                "rank_distribution": ("--rank-distribution", "rank of the first correct item"),
            },
            data=("recall_curves_data", "rank_distribution_data"),
            entries="ranks",
        ),
        ReportJob(
            "retrieval_failures",
            "retrieval-failures",
            {
                "t2i_failures": ("--t2i-output", "worst text → image queries"),
                "i2t_failures": ("--i2t-output", "worst image → text queries"),
            },
            data=("t2i_failures_data", "i2t_failures_data"),
            log="failures",
            per_model=True,
            inputs={
                "images": "dataset_images",
                "image_feats": "features/images",
                "texts": "dataset_texts",
                "text_feats": "features/texts",
                "ranks": "ranks",
            },
            options=gallery_options("failures", "shown", "thumbnail_size"),
        ),
    ),
    score_command="score-retrieval",
    score_inputs={"texts": "dataset_texts", "image_feats": "features/images", "text_feats": "features/texts"},
    scored_with=_scored_with,
    score_options=_score_options,
    checks_predictions=_checks_predictions,
    array_threads=True,
    pairing="clipeval.retrieval.pairing",
)
