from pathlib import Path

from clipeval.commands._options import add_interval_options

HELP = "a suite's averages: each model's mean of its datasets' main metrics, with paired differences"
LIBRARIES = ("numpy",)


def add_arguments(parser):
    parser.add_argument("--suite", required=True, help="the suite's name")
    parser.add_argument("--entry", nargs=3, action="append", required=True, metavar=("MODEL", "DATASET", "RANKS_JSON"))
    parser.add_argument(
        "--benchmark",
        nargs=2,
        action="append",
        default=[],
        metavar=("DATASET", "NAME"),
        help="the benchmark a dataset is (its `published:`): it is averaged by the metric open_clip's table reports",
    )
    parser.add_argument("--baseline", help="compare each other model with this one (default: every two models)")
    add_interval_options(parser)
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    from clipeval.storage.jsonl import write_json
    from clipeval.suites import score_suite

    ranks = {}
    for model, dataset, path in args.entry:
        ranks.setdefault(dataset, {})[model] = Path(path)
    benchmarks = dict(args.benchmark)
    result = score_suite(args.suite, list(ranks), ranks, args.baseline, args.bootstrap, args.seed, benchmarks)
    write_json(args.output, result)
    print(f"suite {args.suite}: {result['averages']}")
