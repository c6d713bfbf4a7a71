from pathlib import Path

from clipeval.commands._options import add_interval_options

HELP = "paired differences of models' metrics on one dataset: every two models, or each against a baseline"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("ranks", type=Path, nargs="+", help="each model's ranks record, in --names order")
    parser.add_argument("--names", nargs="+", required=True, help="the models' names, one per ranks record")
    parser.add_argument("--baseline", help="compare each other model with this one (default: every two models)")
    parser.add_argument("--dataset", required=True)
    add_interval_options(parser)
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    from clipeval.comparison import compare_all
    from clipeval.storage.jsonl import write_json

    comparisons = compare_all(args.names, args.ranks, args.baseline, args.bootstrap, args.seed)
    write_json(args.output, {"dataset": args.dataset, "baseline": args.baseline, "comparisons": comparisons})
    for comparison in comparisons:
        first, second = comparison["models"]
        print(f"{first} − {second} on {args.dataset}: {comparison['difference']}")
