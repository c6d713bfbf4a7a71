from pathlib import Path

HELP = "the report's figure of a linear probe: top-1 against shots per class, per model"
LIBRARIES = ("numpy", "matplotlib", "mplfonts")


def add_arguments(parser):
    parser.add_argument("--dataset", required=True, help="the probe dataset's name, for the title")
    parser.add_argument("--entry", nargs=2, action="append", required=True, metavar=("MODEL", "PROBE_JSON"))
    parser.add_argument("--output", type=Path, required=True, help="PNG (its numbers as .csv beside it)")


def run(args):
    from clipeval.errors import ClipevalError
    from clipeval.reporting.probe_plot import plot_probe
    from clipeval.storage.jsonl import read_json

    scores = {}
    for model, path in args.entry:
        metrics = read_json(path)
        if metrics.get("task") != "probe" or not isinstance(metrics.get("shots"), dict):
            raise ClipevalError(f"{path}: not a probe's scores (score-probe writes them)")
        if scores and list(metrics["shots"]) != list(next(iter(scores.values()))["shots"]):
            raise ClipevalError(f"{path}: its numbers of shots differ from the first model's")
        scores[model] = metrics
    plot_probe(args.dataset, scores, args.output)
    print(f"wrote {args.output}")
