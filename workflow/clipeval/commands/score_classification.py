from pathlib import Path

from clipeval.commands._options import add_score_output_options

HELP = "zero-shot top-1/top-5, per-class metrics"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--class-feats", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True, help="labels.jsonl")
    parser.add_argument("--classes", type=Path, required=True, help="classes.json")
    add_score_output_options(parser)


def run(args):
    from clipeval.classification.metrics import align_labels, load_classes, load_labels, score_classification
    from clipeval.commands._options import write_scores
    from clipeval.errors import ClipevalError
    from clipeval.features.feature_files import check_same_dimension, read_features
    from clipeval.reporting.provenance import result_provenance

    spec = load_classes(args.classes)
    label_ids, labels = load_labels(args.labels, len(spec.classnames))
    image_ids, images = read_features(args.image_feats, "image_id")
    class_ids, classes = read_features(args.class_feats, "class_id")
    if class_ids.tolist() != list(range(len(spec.classnames))):
        raise ClipevalError(f"{args.class_feats}: expected class_id 0 to {len(spec.classnames) - 1} in order")
    check_same_dimension(args.image_feats, images, args.class_feats, classes)
    truth = align_labels(image_ids, label_ids, labels, args.image_feats)
    metrics, record = score_classification(image_ids, images, classes, truth, spec.classnames, args.bootstrap, args.seed)
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    write_scores(args, metrics, record)
    shown = {k: metrics[k] for k in ("top1", "top5", "mean_per_class_recall")}
    print(f"{shown} {'; '.join(metrics['notes'])}".strip())
