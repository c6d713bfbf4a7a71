from pathlib import Path

HELP = "the report's figure of a suite: each dataset's main metric per model, and the average"
LIBRARIES = ("numpy", "matplotlib", "mplfonts")


def add_arguments(parser):
    parser.add_argument("suite", type=Path, help="a score-suite output")
    parser.add_argument(
        "--entry", nargs=3, action="append", required=True, metavar=("MODEL", "DATASET", "METRICS_JSON")
    )
    parser.add_argument("--output", type=Path, required=True, help="PNG (its numbers as .csv beside it)")


def run(args):
    from clipeval.errors import ClipevalError
    from clipeval.reporting.suite_plot import plot_suite
    from clipeval.storage.jsonl import read_json

    suite = read_json(args.suite)
    if not all(key in suite for key in ("suite", "datasets", "models", "averages")):
        raise ClipevalError(f"{args.suite}: not a suite's file (score-suite writes one)")
    scores = {(model, dataset): read_json(path) for model, dataset, path in args.entry}
    missing = [(m, d) for m in suite["models"] for d in suite["datasets"] if (m, d) not in scores]
    if missing:
        raise ClipevalError(f"{args.suite}: no --entry for model {missing[0][0]} on dataset {missing[0][1]}")
    plot_suite(suite, scores, args.output)
    print(f"wrote {args.output}")
