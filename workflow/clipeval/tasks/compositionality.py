"""Compositionality: each example's images choose among its captions (clipeval.compositionality)."""

from clipeval.metric_catalog import ASSOCIATION_METRIC, COMPOSITIONALITY_METRICS
from clipeval.tasks import Breakdown, ReportJob, Task, gallery_options

TASK = Task(
    name="compositionality",
    order=2,
    title="Compositionality",
    table_title="Compositionality",
    breakdowns=(Breakdown("groups", "group", "Compositionality by group"),),  # SugarCrepe's splits, Winoground's tags
    main_metric="text_score",
    main_metric_label="text score",
    metrics=tuple(COMPOSITIONALITY_METRICS),
    # A set whose examples' captions choose several images (WinoGAViL's) has no text score.
    headline_metrics=("text_score", ASSOCIATION_METRIC),
    counts=("texts",),
    record_keys=("groups", "example_ids", "group_of", "outcomes", "choices"),
    captioned=True,
    precomputed_features="texts",
    report_jobs=(
        ReportJob(
            "compositionality_failures",
            "compositionality-failures",
            {"choice_failures": ("--output", "wrong choices")},
            data=("choice_failures_data",),
            log="choice-failures",
            per_model=True,
            inputs={
                "images": "dataset_images",
                "texts": "dataset_texts",
                "examples": "dataset_examples",
                "ranks": "ranks",
            },
            options=gallery_options("failures", "thumbnail_size"),
        ),
    ),
    score_command="score-compositionality",
    score_inputs={"examples": "dataset_examples", "image_feats": "features/images", "text_feats": "features/texts"},
    pairing="clipeval.compositionality.pairing",
)
