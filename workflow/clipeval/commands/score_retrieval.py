from pathlib import Path

from clipeval.commands._options import add_score_output_options
from clipeval.metric_catalog import DEFAULT_RANKING_AT, DEFAULT_RECALL_AT

HELP = "recall@K, ranks, Rsum, mean recall, nDCG@K, MAP@K and MRR@K, both ways"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("--texts", type=Path, required=True, help="texts.jsonl holding the ground truth")
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--text-feats", type=Path, required=True)
    parser.add_argument("--t2i", type=Path, help="top-k predictions to check against the features (full protocol)")
    parser.add_argument("--i2t", type=Path)
    parser.add_argument("--protocol", choices=("full", "folds-1k"), default="full")
    parser.add_argument("--recall-at", type=int, nargs="+", default=list(DEFAULT_RECALL_AT))
    parser.add_argument(
        "--ranking-at",
        type=int,
        nargs="*",
        default=list(DEFAULT_RANKING_AT),
        help="K values of nDCG@K, MAP@K and MRR@K (none: leave them out)",
    )
    parser.add_argument("--allow-queries-without-positive", action="store_true")
    add_score_output_options(parser)


def run(args):
    from clipeval.commands._options import write_scores
    from clipeval.data.captions import load_captions
    from clipeval.errors import ClipevalError
    from clipeval.features.feature_files import check_same_dimension, read_features
    from clipeval.retrieval.metrics import FeatureSet, score_retrieval
    from clipeval.retrieval.predictions import load_predictions
    from clipeval.storage.provenance import result_provenance

    if bool(args.t2i) != bool(args.i2t):
        raise ClipevalError("give both --t2i and --i2t, or neither")
    if args.t2i and args.protocol != "full":
        raise ClipevalError(
            f"--t2i/--i2t rank over the whole gallery; protocol {args.protocol} ranks within folds,"
            " so they cannot be checked: leave them out"
        )
    captions = load_captions(args.texts)
    images = FeatureSet(args.image_feats, *read_features(args.image_feats, "image_id"))
    texts = FeatureSet(args.text_feats, *read_features(args.text_feats, "text_id"))
    check_same_dimension(images.path, images.matrix, texts.path, texts.matrix)
    predictions = (
        {"t2i": load_predictions(args.t2i, "t2i"), "i2t": load_predictions(args.i2t, "i2t")} if args.t2i else None
    )
    metrics, record = score_retrieval(
        captions,
        args.texts,
        images,
        texts,
        args.recall_at,
        ranking_at=args.ranking_at,
        protocol=args.protocol,
        allow_without_positive=args.allow_queries_without_positive,
        predictions=predictions,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    write_scores(args, metrics, record)
    total = f"  rsum {metrics['rsum']:.2f}" if "rsum" in metrics else ""
    print(f"t2i {metrics['t2i']}  i2t {metrics['i2t']}{total}")
