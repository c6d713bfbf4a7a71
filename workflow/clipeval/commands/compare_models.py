from pathlib import Path

from clipeval.commands._options import add_interval_options

HELP = "paired differences of two models' metrics on one dataset"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("first", type=Path, help="the first model's ranks record")
    parser.add_argument("second", type=Path, help="the second model's ranks record")
    parser.add_argument("--names", nargs=2, required=True, metavar=("FIRST", "SECOND"))
    parser.add_argument("--dataset", required=True)
    add_interval_options(parser)
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    from clipeval.statistics.comparison import compare_models, read_ranks_record
    from clipeval.storage.jsonl import write_json

    first, second = (read_ranks_record(path) for path in (args.first, args.second))
    result = compare_models(args.names, first, second, args.second, args.bootstrap, args.seed)
    write_json(args.output, {**result, "dataset": args.dataset})
    print(f"{args.names[0]} − {args.names[1]} on {args.dataset}: {result['difference']}")
