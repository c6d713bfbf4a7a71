from pathlib import Path

HELP = "the experiment a run of these config files writes: NAME, or NAME-2 … where another config's run holds NAME"
LIBRARIES = ("pyyaml",)


def add_arguments(parser):
    parser.add_argument(
        "configs", nargs="*", type=Path, help="the run's config files, in order (default: config/config.yaml)"
    )
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")


def run(args):
    import yaml

    from clipeval.errors import ClipevalError
    from clipeval.experiments import DEFAULT_CONFIG, experiment_folder, recorded_config_files

    configs = args.configs or [Path(DEFAULT_CONFIG)]
    merged = {}
    for path in configs:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            raise ClipevalError(f"{path}: cannot read the config ({type(error).__name__})") from None
        merged.update(loaded if isinstance(loaded, dict) else {})
    name = merged.get("experiment") or configs[-1].stem
    print(experiment_folder(name, recorded_config_files(configs), args.results, bool(merged.get("replace"))))
