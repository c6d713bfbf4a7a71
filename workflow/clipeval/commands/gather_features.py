from pathlib import Path

HELP = "concatenate feature shards in order"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("shards", type=Path, nargs="+")
    parser.add_argument("--id-key", choices=("image_id", "text_id"), default="image_id")
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    from clipeval.features.feature_files import gather_features, write_features

    ids, matrix = gather_features(args.shards, args.id_key)
    write_features(args.output, args.id_key, ids, matrix)
    print(f"gathered {len(ids)} features from {len(args.shards)} shards")
