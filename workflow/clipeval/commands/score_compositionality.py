from pathlib import Path

from clipeval.commands._options import add_score_output_options

HELP = "compositionality: text, image and group scores (SugarCrepe, Winoground)"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("--examples", type=Path, required=True, help="examples.jsonl")
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--text-feats", type=Path, required=True)
    add_score_output_options(parser)


def run(args):
    from clipeval.commands._options import write_scores
    from clipeval.compositionality.metrics import score_compositionality
    from clipeval.data.choices import load_examples
    from clipeval.features.feature_files import check_same_dimension, read_features
    from clipeval.storage.provenance import result_provenance

    examples = load_examples(args.examples)
    image_ids, images = read_features(args.image_feats, "image_id")
    text_ids, texts = read_features(args.text_feats, "text_id")
    check_same_dimension(args.image_feats, images, args.text_feats, texts)
    metrics, record = score_compositionality(
        examples, image_ids, images, text_ids, texts, args.image_feats, args.text_feats, args.bootstrap, args.seed
    )
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    write_scores(args, metrics, record)
    shown = {key: round(value, 2) for key, value in metrics.items() if key.endswith("_score")}
    print(f"{shown} over {metrics['counts']['examples']} examples")
