"""Zero-shot classification: each image ranks the class prompts' features (clipeval.classification)."""

from clipeval.metric_catalog import CLASSIFICATION_METRICS, MULTILABEL_METRIC
from clipeval.tasks import ReportJob, Task, gallery_options

TASK = Task(
    name="classification",
    order=1,
    title="Classification",
    table_title="Zero-shot classification",
    main_metric="top1",
    main_metric_label="top-1",
    metrics=tuple(CLASSIFICATION_METRICS),
    headline_metrics=(MULTILABEL_METRIC,),  # a multi-label set's, whose top-1 is undefined
    counts=("classes",),
    grouped=True,
    record_keys=("num_classes", "image_ids", "labels", "ranks"),
    precomputed_features="classes",
    headline_block="classification_headline",
    report_jobs=(
        ReportJob(
            "plot_classification",
            "plot-dataset",
            {"class_recall": ("--class-recall", "recall per class")},
            data=("class_recall_data",),
        ),
        ReportJob(
            "classification_failures",
            "classification-failures",
            {
                "confusion": ("--confusion-output", "confusion matrix"),
                "confused_pairs": ("--pairs-output", "most confused classes"),
            },
            data=("confusion_data",),
            log="failures",
            per_model=True,
            inputs={
                "images": "dataset_images",
                "image_feats": "features/images",
                "class_feats": "features/classes",
                "labels": "dataset_labels",
                "classes": "dataset_classes",
            },
            options=gallery_options("failures", "shown", "thumbnail_size"),
        ),
    ),
    score_command="score-classification",
    score_inputs={
        "image_feats": "features/images",
        "class_feats": "features/classes",
        "labels": "dataset_labels",
        "classes": "dataset_classes",
    },
    pairing="clipeval.classification.pairing",
)
