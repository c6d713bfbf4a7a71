from pathlib import Path

HELP = "the report's figure of a checkpoint series, and its TensorBoard event file: each dataset's main metric by step"
LIBRARIES = ("numpy", "matplotlib", "mplfonts")


def add_arguments(parser):
    parser.add_argument("--series", required=True, help="the series' name (its model entry in the config)")
    parser.add_argument("--table", type=Path, required=True, help="the summary's series.csv")
    parser.add_argument("--output", type=Path, required=True, help="PNG (its numbers as .csv beside it)")
    parser.add_argument("--events", type=Path, help="also write the series as this TensorBoard event file")


def run(args):
    from clipeval.reporting.series_plot import plot_series, read_series_table
    from clipeval.reporting.tensorboard_events import series_events
    from clipeval.storage.atomic import atomic_output

    rows = read_series_table(args.table, args.series)
    plot_series(args.series, rows, args.output)
    print(f"wrote {args.output}")
    if args.events:
        with atomic_output(args.events) as temporary:
            temporary.write_bytes(series_events(rows))
        print(f"wrote {args.events}")
