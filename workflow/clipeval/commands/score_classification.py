from pathlib import Path

from clipeval.commands._options import add_score_output_options

HELP = (
    "zero-shot top-1/top-5, per-class metrics, and by group where the labels give groups; mean average precision"
    " for a multi-label set"
)
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--class-feats", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True, help="labels.jsonl")
    parser.add_argument("--classes", type=Path, required=True, help="classes.json")
    add_score_output_options(parser)


def run(args):
    from clipeval.classification.groups import load_groups
    from clipeval.classification.inputs import load_classification_inputs
    from clipeval.classification.metrics import score_classification
    from clipeval.classification.multilabel import score_multilabel
    from clipeval.commands._options import write_scores
    from clipeval.metric_catalog import CLASSIFICATION_METRICS
    from clipeval.storage.provenance import result_provenance

    given = load_classification_inputs(args.classes, args.labels, args.image_feats, args.class_feats)
    scored = (given.image_ids, given.images, given.classes, given.labels, given.spec.classnames)
    if given.labels.ndim == 2:
        metrics, record = score_multilabel(*scored, args.bootstrap, args.seed)
    else:
        groups = load_groups(args.labels, given.image_ids)
        metrics, record = score_classification(*scored, args.bootstrap, args.seed, groups)
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    write_scores(args, metrics, record)
    shown = {metric.column: metrics[metric.column] for metric in CLASSIFICATION_METRICS if metric.column in metrics}
    print(f"{shown} {'; '.join(metrics['notes'])}".strip())
