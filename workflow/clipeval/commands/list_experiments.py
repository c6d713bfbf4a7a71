from pathlib import Path

HELP = "list the experiments in a results folder, each scored pair with its headline metric"
LIBRARIES = ()
COLUMNS = ("experiment", "model", "dataset", "task", "metric", "value", "summary")


def add_arguments(parser):
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")


def run(args):
    from clipeval.experiments import listing

    rows = listing(args.results)
    if not rows:
        print(f"no experiments in {args.results} (each run records one under {args.results}/experiments/)")
        return
    widths = {column: max(len(column), *(len(row[column]) for row in rows)) for column in COLUMNS}
    for row in [dict(zip(COLUMNS, COLUMNS)), *rows]:
        print("  ".join(row[column].ljust(widths[column]) for column in COLUMNS).rstrip())
