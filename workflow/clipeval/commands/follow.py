import argparse
from pathlib import Path

HELP = (
    "follow a training run: evaluate each checkpoint of the config's series once it is written whole, until a"
    " signal or --last-step"
)
LIBRARIES = ("pyyaml",)


def seconds(text) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def positive_seconds(text) -> float:
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds: the follow would look without a pause")
    return value


def add_arguments(parser):
    parser.add_argument(
        "config", nargs="?", type=Path, default=Path("config/config.yaml"), help="a config with a checkpoint series"
    )
    parser.add_argument(
        "--poll", type=positive_seconds, default=30.0, help="seconds between looks at the series' files"
    )
    parser.add_argument(
        "--settle", type=seconds, default=10.0, help="seconds a file must stay unchanged before it is evaluated"
    )
    parser.add_argument("--last-step", type=int, help="stop once every series has a checkpoint of this step or later")
    parser.add_argument("--once", action="store_true", help="evaluate the checkpoints written now, then stop")
    parser.add_argument("--cores", default="all", help="Snakemake's --cores")
    parser.add_argument("--profile", help="a Snakemake profile, for example profiles/slurm")
    parser.add_argument(
        "--wandb",
        metavar="PROJECT",
        help="also log each checkpoint's main metrics to this Weights & Biases project (WANDB_MODE=offline: locally)",
    )


# Where the workflow writes (planning/artifacts.py's RESULTS): the folder it runs in.
RESULTS = Path("results")


def run(args):
    import signal
    import time

    from clipeval.errors import ClipevalError
    from clipeval.experiments import experiment_dir, experiment_of_configs
    from clipeval.following.loop import Follower, follow
    from clipeval.following.runs import followed_series, interrupt, problem, run_logged, snakemake_command
    from clipeval.reporting.series_table import member_headline, read_series_csv

    series = followed_series(args.config)
    experiment = experiment_of_configs([args.config], RESULTS)
    folder = experiment_dir(RESULTS, experiment)
    ready_list = RESULTS / "follow" / f"{experiment}.checkpoints"
    log = Path("logs/follow") / f"{experiment}.log"
    command = snakemake_command(args.config, ready_list, args.cores, args.profile)
    running, stop = [], []

    def on_signal(number, frame):
        stop.append(number)
        for process in running:
            interrupt(process)  # Snakemake stops its jobs and frees its lock

    def started(process):
        running.append(process)
        if stop:  # a signal came before the run started: it stops at once
            interrupt(process)

    def evaluate(new_paths, new_models):
        status, output = run_logged(command, log, started)
        running.clear()
        return problem(status, output, log, new_paths, new_models)

    def headline(model):
        found = member_headline(read_series_csv(folder / "series.csv"), model)
        return f": {found}" if found else ""

    tracker = None
    if args.wandb:
        from clipeval.following.wandb_runs import WandbRuns

        tracker = WandbRuns(
            args.wandb, experiment, Path("logs/follow"), RESULTS / "follow" / f"{experiment}.wandb-steps.json"
        )

    def after_evaluation():
        if tracker is not None:
            for line in tracker.log(read_series_csv(folder / "series.csv")):
                print(line, flush=True)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    follower = Follower(
        series,
        ready_list,
        evaluate,
        args.settle,
        args.last_step,
        say=lambda line: print(line, flush=True),
        headline=headline,
        after_evaluation=after_evaluation,
    )
    print(f"following {', '.join(f'{name} ({pattern})' for name, pattern in series.items())}; log: {log}", flush=True)
    try:
        reason = follow(follower, args.poll, args.once, time.monotonic, time.sleep, lambda: bool(stop))
    finally:
        if tracker is not None:
            tracker.close()
    print(f"{reason}; {len(follower.evaluated)} checkpoints evaluated, results in {folder}")
    if follower.failed:
        raise ClipevalError(f"{len(follower.failed)} checkpoints failed: {', '.join(sorted(follower.failed))}")
