from pathlib import Path

HELP = "the experiment a run of these config files writes: NAME, or NAME-2 … where another config's run holds NAME"
LIBRARIES = ("pyyaml",)


def add_arguments(parser):
    parser.add_argument(
        "configs", nargs="*", type=Path, help="the run's config files, in order (default: config/config.yaml)"
    )
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")


def run(args):
    from clipeval.experiments import experiment_of_configs

    print(experiment_of_configs(args.configs, args.results))
