from pathlib import Path

HELP = "gather metrics into summary.csv and summary.md"
LIBRARIES = ()


def add_arguments(parser):
    parser.add_argument("--entry", nargs=3, action="append", metavar=("MODEL", "DATASET", "METRICS_JSON"))
    parser.add_argument("--comparison", type=Path, action="append", help="a compare-models output")
    parser.add_argument("--csv", type=Path, required=True)
    parser.add_argument("--markdown", type=Path, required=True)
    parser.add_argument("--averages", type=Path, required=True)
    parser.add_argument("--comparisons", type=Path, required=True)


def run(args):
    from clipeval.reporting.summary import summarize

    outputs = {"csv": args.csv, "markdown": args.markdown, "averages": args.averages, "comparisons": args.comparisons}
    rows = summarize([tuple(entry) for entry in args.entry or []], args.comparison or [], outputs)
    print(f"wrote {len(rows)} rows to {args.csv} and {args.markdown}")
