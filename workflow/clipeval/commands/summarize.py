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
    parser.add_argument(
        "--series-member",
        nargs=3,
        action="append",
        metavar=("SERIES", "STEP", "MODEL"),
        help="a checkpoint series' model and its step, once per member",
    )
    parser.add_argument("--series", type=Path, required=True, help="the series' table (CSV), by step")
    parser.add_argument("--groups", type=Path, help="each group's top-1 and top-5 of the sets scored by group (CSV)")
    parser.add_argument("--suite", type=Path, action="append", help="a score-suite output")
    parser.add_argument(
        "--tokenization",
        nargs=3,
        action="append",
        metavar=("MODEL", "DATASET", "RECORD_JSON"),
        help="the tokenization record of a model's captions of a dataset (extract-features --tokenization-output)",
    )


def run(args):
    from clipeval.errors import ClipevalError
    from clipeval.reporting.summary import summarize

    outputs = {"csv": args.csv, "markdown": args.markdown, "averages": args.averages, "comparisons": args.comparisons}
    outputs["series"] = args.series
    if args.groups:
        outputs["groups"] = args.groups
    series = {}
    for name, step, model in args.series_member or []:
        if not step.isdigit():
            raise ClipevalError(f"--series-member {name} {step} {model}: the step must be a whole number")
        series.setdefault(name, []).append((int(step), model))
    entries = [tuple(entry) for entry in args.entry or []]
    tokenization = [tuple(entry) for entry in args.tokenization or []]
    rows = summarize(entries, args.comparison or [], outputs, series, args.suite or [], tokenization)
    print(f"wrote {len(rows)} rows to {args.csv} and {args.markdown}")
