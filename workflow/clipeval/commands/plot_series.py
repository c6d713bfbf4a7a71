from pathlib import Path

HELP = "the report's figure of a checkpoint series: each dataset's main metric by step"
LIBRARIES = ("numpy", "matplotlib", "mplfonts")


def add_arguments(parser):
    parser.add_argument("--series", required=True, help="the series' name (its model entry in the config)")
    parser.add_argument("--table", type=Path, required=True, help="the summary's series.csv")
    parser.add_argument("--output", type=Path, required=True, help="PNG (its numbers as .csv beside it)")


def run(args):
    from clipeval.reporting.series_plot import plot_series, read_series_table

    plot_series(args.series, read_series_table(args.table, args.series), args.output)
    print(f"wrote {args.output}")
