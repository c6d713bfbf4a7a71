from pathlib import Path

HELP = "the report's tables: results with intervals and averages, and the provenance of every result"
LIBRARIES = ("pandas",)


def add_arguments(parser):
    parser.add_argument("--experiment", required=True)
    parser.add_argument(
        "--entry", nargs=3, action="append", required=True, metavar=("MODEL", "DATASET", "METRICS_JSON")
    )
    parser.add_argument("--suite", type=Path, action="append", help="a score-suite output")
    parser.add_argument("--results", type=Path, required=True, help="HTML page of the results")
    parser.add_argument("--provenance", type=Path, required=True, help="HTML page of the provenance")


def run(args):
    from clipeval.reporting.tables import provenance_page, results_page
    from clipeval.storage.atomic import atomic_output

    entries = [tuple(entry) for entry in args.entry]
    for path, text in (
        (args.results, results_page(args.experiment, entries, args.suite or [])),
        (args.provenance, provenance_page(args.experiment, entries)),
    ):
        with atomic_output(path) as temporary:
            Path(temporary).write_text(text, encoding="utf-8")
    print(f"wrote {args.results} and {args.provenance}")
