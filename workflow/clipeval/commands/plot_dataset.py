from pathlib import Path

HELP = "the report's figures of one dataset: recall@K curves and rank distribution, or recall per class"
LIBRARIES = ("numpy", "matplotlib", "mplfonts")


def add_arguments(parser):
    parser.add_argument("--dataset", required=True)
    parser.add_argument(
        "--entry",
        nargs=2,
        action="append",
        required=True,
        metavar=("MODEL", "FILE"),
        help="a model and its ranks record (retrieval) or classification.json, in config order",
    )
    parser.add_argument("--recall-curves", type=Path, help="retrieval: recall@K curves (PNG; their numbers as .csv)")
    parser.add_argument("--rank-distribution", type=Path, help="retrieval: ranks of the first correct item")
    parser.add_argument(
        "--class-recall", type=Path, help="classification: recall (multi-label: average precision) per class"
    )


def run(args):
    from clipeval.errors import ClipevalError
    from clipeval.reporting import dataset_plots
    from clipeval.storage.jsonl import read_json
    from clipeval.storage.ranks_records import read_ranks_record

    if args.class_recall:
        per_class, multilabel = {}, set()
        for model, path in args.entry:
            metrics = read_json(path)
            if metrics.get("task") != "classification" or not isinstance(metrics.get("per_class"), dict):
                raise ClipevalError(f"{path}: not a classification metrics file (score-classification writes one)")
            per_class[model] = metrics["per_class"]
            multilabel.add(bool(metrics.get("multilabel")))
        if len(multilabel) > 1:
            raise ClipevalError(f"{args.dataset}: some of its classification files are multi-label and some not")
        value = "average_precision" if multilabel.pop() else "recall"
        dataset_plots.plot_class_recall(args.dataset, per_class, args.class_recall, value)
        print(f"wrote {args.class_recall}")
        return
    if not (args.recall_curves and args.rank_distribution):
        raise ClipevalError("give --recall-curves and --rank-distribution (retrieval) or --class-recall")
    records = {}
    for model, path in args.entry:
        record = read_ranks_record(path)
        if record["task"] != "retrieval":
            raise ClipevalError(f"{path}: a {record['task']} ranks record; these figures need retrieval ranks")
        records[model] = record
    dataset_plots.plot_recall_curves(args.dataset, records, args.recall_curves)
    dataset_plots.plot_rank_distribution(args.dataset, records, args.rank_distribution)
    print(f"wrote {args.recall_curves} and {args.rank_distribution}")
