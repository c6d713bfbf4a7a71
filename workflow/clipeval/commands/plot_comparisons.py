from pathlib import Path

HELP = "the report's forest plot of one dataset's paired comparisons"
LIBRARIES = ("numpy", "matplotlib", "mplfonts")


def add_arguments(parser):
    parser.add_argument("comparisons", type=Path, help="a compare-models output")
    parser.add_argument("--output", type=Path, required=True, help="PNG (its numbers as .csv beside it)")


def run(args):
    from clipeval.errors import ClipevalError
    from clipeval.reporting.forest_plot import plot_forest
    from clipeval.storage.jsonl import read_json

    record = read_json(args.comparisons)
    comparisons = record.get("comparisons")
    if not isinstance(comparisons, list) or not comparisons or "dataset" not in record:
        raise ClipevalError(f"{args.comparisons}: not a comparisons file (compare-models writes one)")
    plot_forest(record["dataset"], comparisons, comparisons[0]["task"], args.output)
    print(f"wrote {args.output}")
