# What every stage needs: the package on the path, the source formats,
# config lookups and checks, every artifact's path, and code fingerprints.
# Each stage's own input functions are in inputs.smk.

import hashlib
import json
import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

PACKAGE_DIR = Path(workflow.basedir) / "workflow" / "clipeval"
sys.path.insert(0, str(PACKAGE_DIR.parent))
from clipeval.cli import command_module
from clipeval.codegraph import CodeGraph, command_entry_modules
from clipeval.config_errors import config_error, location
from clipeval.data.sources import FILE, FOLDER, format_names, source_format
from clipeval.errors import ClipevalError
from clipeval.experiments import experiment_conflict, experiment_dir, record_path
from clipeval.metric_catalog import DEFAULT_RECALL_AT
from clipeval.models.numerics import PORTABLE_THREADS
from clipeval.models.pretrained import is_checkpoint_path
from clipeval.features.sharding import shard_count

ENV_FILE = "../../envs/clipeval.yaml"

# Rules run `python -m clipeval` from this checkout, so a conda environment
# (--sdm conda) needs only the dependencies, not an install of clipeval.
# Without conda, jobs use the Python that runs Snakemake (a virtualenv's
# snakemake works without activating the virtualenv).
_use_conda = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
shell.prefix(
    "set -euo pipefail; "
    # Braces are doubled: Snakemake formats the prefix like a shell command.
    + "export PYTHONPATH="
    + shlex.quote(str(PACKAGE_DIR.parent))
    + "${{PYTHONPATH:+:$PYTHONPATH}}; "
    + ("" if _use_conda else f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH; ")
)

EVALUATED_TASKS = ("retrieval", "classification")

# Speed knobs change how fast a stage runs, never what it writes. They reach
# rules as resources, which Snakemake does not compare between runs, so
# changing one re-runs nothing. Anything else a stage reads must be a param.
SPEED_KNOBS = {
    "extract": ("batch_size", "num_workers", "device"),
    "knn": ("device",),
}

# Threads a training, extraction or knn job computes with (under the portable
# numerics profile, always this many), so the scheduler reserves what it uses.
COMPUTE_THREADS = PORTABLE_THREADS


def speed_knobs(section):
    return {knob: config[section][knob] for knob in SPEED_KNOBS[section]}


CODE_GRAPH = CodeGraph(PACKAGE_DIR)


def _installed_version(distribution):
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def code_fingerprint(command, source_format=None):
    """A digest of the code `python -m clipeval COMMAND [FORMAT]` runs and its libraries' versions."""
    digest = hashlib.sha256(CODE_GRAPH.digest(command_entry_modules(command, source_format)).encode())
    # With the command's own modules, the installed versions of the libraries
    # that shape its output (its module's LIBRARIES): shell rules notice neither.
    for library in command_module(command).LIBRARIES:
        digest.update(f"{library}=={_installed_version(library)}\n".encode())
    return digest.hexdigest()[:16]


def fail(message):
    raise WorkflowError(f"config error: {message}")


# Every source format (workflow/clipeval/data/sources/), by its config name.
SOURCE_FORMATS = {name: source_format(name) for name in format_names()}


def check_schema():
    schema = yaml.safe_load((Path(workflow.basedir) / "config/schema.yaml").read_text())
    message = config_error(config, schema, list(SOURCE_FORMATS))
    if message:
        fail(message)


def dataset_config(name):
    if name not in config["datasets"]:
        fail(f"unknown dataset {name!r} (known: {', '.join(config['datasets'])})")
    return config["datasets"][name]


def model_config(name):
    if name not in config["models"]:
        fail(f"unknown model {name!r} (known: {', '.join(config['models'])})")
    return config["models"][name]


def is_features_model(name):
    return "features" in model_config(name)


def precomputed_features(model, dataset):
    """A features model's files for one dataset (check_config has checked them against its task)."""
    return model_config(model)["features"][dataset]


def evaluation_pairs():
    """(model, dataset) pairs, in config order."""
    if "evaluate" in config:
        return [(entry["model"], entry["dataset"]) for entry in config["evaluate"]]
    return [
        (model, dataset)
        for model in config["models"]
        for dataset, entry in config["datasets"].items()
        if entry["task"] in EVALUATED_TASKS
        and (not is_features_model(model) or dataset in config["models"][model]["features"])
    ]


def evaluated_datasets(task):
    """The datasets of one task that some model is evaluated on, in config order."""
    pairs = {dataset for _, dataset in evaluation_pairs()}
    return [name for name, entry in config["datasets"].items() if entry["task"] == task and name in pairs]


def models_on(dataset):
    """The models evaluated on a dataset, in config order."""
    return [model for model, evaluated in evaluation_pairs() if evaluated == dataset]


def compared_models():
    """{dataset: the models compared on it, in config order}: datasets with two models or more.

    With `compare.baseline`, only datasets the baseline is evaluated on: each
    other model there is compared with it.
    """
    by_dataset = {}
    for model, dataset in evaluation_pairs():
        by_dataset.setdefault(dataset, []).append(model)
    baseline = config["compare"].get("baseline")
    return {
        dataset: models
        for dataset, models in by_dataset.items()
        if len(models) > 1 and (baseline is None or baseline in models)
    }


def fill_metric_defaults():
    """The K values of R@K (the metric catalogue's unless the config names them), and top-k lists as deep as the
    largest K unless knn.top_k is set."""
    config["metrics"].setdefault("recall_at", list(DEFAULT_RECALL_AT))
    config["knn"].setdefault("top_k", max(config["metrics"]["recall_at"]))


def check_config():
    """Checks that span several config sections, which the schema cannot express; then the inputs."""

    def known(key, name, section):
        if name not in config[section]:
            fail(f"{location(key)}: unknown {section[:-1]} {name!r} (known: {', '.join(config[section])})")

    def evaluated(key, dataset):
        known(key, dataset, "datasets")
        task = config["datasets"][dataset]["task"]
        if task not in EVALUATED_TASKS:
            fail(f"{location(key)}: dataset {dataset!r} has task {task!r}, which is not evaluated")

    for name, entry in config["models"].items():
        if "train" in entry:
            known(("models", name, "train", "dataset"), entry["train"]["dataset"], "datasets")
        for dataset, files in entry.get("features", {}).items():
            evaluated(("models", name, "features", dataset), dataset)
            needed = {"retrieval": "texts", "classification": "classes"}[config["datasets"][dataset]["task"]]
            if needed not in files:
                fail(
                    f"{location(('models', name, 'features', dataset))}: a {config['datasets'][dataset]['task']}"
                    f" dataset needs {needed!r} features"
                )
    if "baseline" in config["compare"]:
        known(("compare", "baseline"), config["compare"]["baseline"], "models")
    for index, entry in enumerate(config.get("evaluate", [])):
        known(("evaluate", index, "model"), entry["model"], "models")
        evaluated(("evaluate", index, "dataset"), entry["dataset"])
        features = config["models"][entry["model"]].get("features")
        if features is not None and entry["dataset"] not in features:
            fail(
                f"{location(('evaluate', index))}: model {entry['model']!r} has no features for dataset"
                f" {entry['dataset']!r}"
            )
    deepest = max(config["metrics"]["recall_at"])
    knn_runs = any(
        config["datasets"][dataset]["task"] == "retrieval" and retrieval_protocol(dataset) == "full"
        for _, dataset in evaluation_pairs()
    )
    if knn_runs and config["knn"]["top_k"] < deepest:
        fail(f"knn.top_k: {config['knn']['top_k']} is too few: R@{deepest} needs at least {deepest} predictions")
    check_inputs()
    check_experiments()


def config_files():
    """The config files of this run (the default experiment's when none is given), relative to the working
    directory when inside it: Snakemake hands them over as absolute paths, which would differ between copies."""
    given = [Path(path) for path in workflow.config_settings.configfiles] or [Path("config/config.yaml")]
    here = Path.cwd()
    return [str(path.relative_to(here) if path.is_relative_to(here) else path) for path in given]


def experiment_name():
    """The config's `experiment`, else its (last) config file's name without .yaml."""
    return config.get("experiment") or Path(config_files()[-1]).stem


def experiment_record():
    """What this experiment defines, for the check against the others and results/experiments/NAME/."""
    return {
        "experiment": experiment_name(),
        "config_files": config_files(),
        "datasets": config["datasets"],
        "models": {name: model_definition(name) for name in config["models"]},
        "scores": {f"{model} on {dataset}": scoring_settings(dataset) for model, dataset in evaluation_pairs()},
        "config": config,
    }


def check_experiments():
    """No dataset, model or score that this experiment shares by name with another is defined otherwise."""
    try:
        conflict = experiment_conflict(experiment_record(), Path("results"))
    except ClipevalError as error:
        fail(str(error))
    if conflict:
        fail(conflict)


def write_experiment_record():
    """Claims this experiment's names before its first job runs (run from onstart, so never in a dry run)."""
    from clipeval.storage.jsonl import write_json

    write_json(record_path(Path("results"), experiment_name()), experiment_record())


def entry_settings(dataset, kind):
    """(setting, value) for each setting of this kind (FILE, FOLDER, VALUE) that a dataset's entry gives."""
    entry = dataset_config(dataset)
    return [
        (setting, entry[setting.key])
        for setting in SOURCE_FORMATS[entry["format"]].settings
        if setting.kind == kind and setting.key in entry
    ]


def check_inputs():
    """Every file and folder the config names exists, before anything runs.

    Snakemake does not look at the inputs of jobs whose outputs exist: a
    mistyped path of a prepared dataset would otherwise plan nothing and exit 0.
    """
    trained = {artifact("checkpoint", model=name) for name, entry in config["models"].items() if "train" in entry}
    named = [
        (("datasets", dataset, setting.key), value, kind)
        for dataset in config["datasets"]
        for kind in (FILE, FOLDER)
        for setting, value in entry_settings(dataset, kind)
    ]
    for name, entry in config["models"].items():
        weights = entry.get("pretrained", "")
        if is_checkpoint_path(weights) and weights not in trained:
            named.append((("models", name, "pretrained"), weights, FILE))
        named += [
            (("models", name, "features", dataset, kind), path, FILE)
            for dataset, files in entry.get("features", {}).items()
            for kind, path in files.items()
        ]
    for key, path, kind in named:
        if not (Path(path).is_dir() if kind == FOLDER else Path(path).exists()):
            fail(f"{location(key)}: {'folder' if kind == FOLDER else 'file'} {path} not found")


# Dataset keys that say how a dataset is scored, not what is in it.
SCORING_KEYS = ("task", "protocol")


def definition(wildcards):
    """The config entries of the models and datasets behind a job, as a param.

    Snakemake does not re-run a job whose outputs exist when an input is
    missing (say a failed re-training deleted the checkpoint): the upstream
    change must reach every job's own params, or stale results would stay.
    """
    names = wildcards.keys()
    return models_and_dataset(
        [wildcards.model] if "model" in names else [], wildcards.dataset if "dataset" in names else None
    )


def comparison_definition(wildcards):
    """definition() of a comparison job: every model it compares, and the dataset."""
    return models_and_dataset(compared_models()[wildcards.dataset], wildcards.dataset)


def models_and_dataset(models, dataset):
    entry = {f"model {name}": model_config(name) for name in models}
    if dataset is not None:
        entry["dataset"] = {k: v for k, v in dataset_config(dataset).items() if k not in SCORING_KEYS}
    return json.dumps(entry, sort_keys=True)


def retrieval_protocol(dataset):
    return dataset_config(dataset).get("protocol", config["metrics"]["protocol"])


def feature_files(model, dataset):
    """{images, texts | classes}: a model's features for a dataset, extracted or precomputed."""
    if is_features_model(model):
        return precomputed_features(model, dataset)
    return {
        kind: artifact(f"{item}_features", model=model, dataset=dataset)
        for kind, item in (("images", "image"), ("texts", "text"), ("classes", "class"))
    }


# Every artifact's path, written once: rules name these as outputs, and input
# functions fill them in with artifact(). The layout is in docs/ARCHITECTURE.md.
ARTIFACTS = {
    "dataset_images": "results/datasets/{dataset}/images.lmdb",
    "dataset_texts": "results/datasets/{dataset}/texts.jsonl",
    "dataset_labels": "results/datasets/{dataset}/labels.jsonl",
    "dataset_classes": "results/datasets/{dataset}/classes.json",
    "dataset_meta": "results/datasets/{dataset}/meta.json",
    "checkpoint": "results/models/{model}/checkpoint.pt",
    "model_meta": "results/models/{model}/meta.json",
    "image_shard": "results/features/{model}/{dataset}/image-shards/{shard}.jsonl",
    "image_features": "results/features/{model}/{dataset}/images.jsonl",
    "text_features": "results/features/{model}/{dataset}/texts.jsonl",
    "class_features": "results/features/{model}/{dataset}/classes.jsonl",
    "predictions": "results/predictions/{model}/{dataset}/{direction}.jsonl",
    "retrieval_scores": "results/scores/{model}/{dataset}/retrieval.json",
    "retrieval_ranks": "results/scores/{model}/{dataset}/retrieval-ranks.json",
    "classification_scores": "results/scores/{model}/{dataset}/classification.json",
    "classification_ranks": "results/scores/{model}/{dataset}/classification-ranks.json",
}


# Each experiment's own files, under results/experiments/NAME/ (their logs
# are logs/STAGE/NAME…): what depends on which models it holds.
EXPERIMENT_OUTPUTS = {
    "comparisons": "comparisons/{dataset}.json",
    "summary_csv": "summary.csv",
    "summary_markdown": "summary.md",
    "averages": "averages.csv",
    "comparison_table": "comparisons.csv",
    # The report's files (report.smk); each figure's numbers in the CSV or JSON beside it.
    "results_page": "report/results.html",
    "provenance_page": "report/provenance.html",
    "recall_curves": "report/{dataset}/recall-curves.png",
    "recall_curves_data": "report/{dataset}/recall-curves.csv",
    "rank_distribution": "report/{dataset}/rank-distribution.png",
    "rank_distribution_data": "report/{dataset}/rank-distribution.csv",
    "class_recall": "report/{dataset}/class-recall.png",
    "class_recall_data": "report/{dataset}/class-recall.csv",
    "forest_plot": "report/{dataset}/comparisons.png",
    "forest_plot_data": "report/{dataset}/comparisons.csv",
    "t2i_failures": "report/{dataset}/{model}/failures-t2i.png",
    "t2i_failures_data": "report/{dataset}/{model}/failures-t2i.json",
    "i2t_failures": "report/{dataset}/{model}/failures-i2t.png",
    "i2t_failures_data": "report/{dataset}/{model}/failures-i2t.json",
    "confusion": "report/{dataset}/{model}/confusion.png",
    "confusion_data": "report/{dataset}/{model}/confusion.csv",
    "confused_pairs": "report/{dataset}/{model}/confused-pairs.png",
}


def experiment_artifact(name):
    """The path pattern of one of this experiment's own files, its wildcards left in."""
    return str(experiment_dir(Path("results"), experiment_name()) / EXPERIMENT_OUTPUTS[name])


def artifact(name, **wildcards):
    pattern = experiment_artifact(name) if name in EXPERIMENT_OUTPUTS else ARTIFACTS[name]
    return pattern.format(**wildcards)


def names_matching(names):
    """A wildcard constraint matching exactly these names (or nothing)."""
    names = list(names)
    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


def checkpoint_of(model):
    """The weights file a model's extraction depends on, if it is local."""
    entry = model_config(model)
    if "train" in entry:
        return artifact("checkpoint", model=model)
    return entry["pretrained"] if is_checkpoint_path(entry["pretrained"]) else None


def model_precision(model):
    return model_config(model).get("precision", config["extract"]["precision"])


def preprocess_option(wildcards):
    preprocess = model_config(wildcards.model).get("preprocess")
    if not preprocess:
        return ""
    return f"--preprocess {shlex.quote(json.dumps(preprocess, sort_keys=True))}"


def weights_input(wildcards):
    weights = checkpoint_of(wildcards.model)
    return {"weights": weights} if weights else {}


def pretrained_option(wildcards, input):
    if "weights" in input.keys():
        return f"--pretrained {shlex.quote(input.weights)}"
    return f"--pretrained {shlex.quote(model_config(wildcards.model)['pretrained'])}"


def interval_options():
    metrics = config["metrics"]
    return f"--bootstrap {metrics['bootstrap']} --seed {metrics['bootstrap_seed']}"


def model_definition(name):
    """A model's entry and the settings that shape its checkpoint and features."""
    if is_features_model(name):
        return model_config(name)
    return {**model_config(name), "precision": model_precision(name), "numerics": config["numerics"]}


def scoring_settings(dataset):
    """The settings beyond the model and dataset entries that shape a pair's predictions and scores."""
    metrics = {key: config["metrics"][key] for key in ("bootstrap", "bootstrap_seed")}
    if dataset_config(dataset)["task"] != "retrieval":
        return {"metrics": metrics}
    metrics.update(config["metrics"], protocol=retrieval_protocol(dataset))
    return {"metrics": metrics, "knn": {"top_k": config["knn"]["top_k"]}}


def result_config(wildcards):
    """The config that determines a score, recorded in its provenance."""
    model = model_config(wildcards.model)
    if is_features_model(wildcards.model):
        model = {"features": {wildcards.dataset: precomputed_features(wildcards.model, wildcards.dataset)}}
    return json.dumps(
        {
            "model": {"name": wildcards.model, **model},
            "dataset": {"name": wildcards.dataset, **dataset_config(wildcards.dataset)},
            **scoring_settings(wildcards.dataset),
            **(
                {}
                if is_features_model(wildcards.model)
                else {"extract": {"precision": model_precision(wildcards.model)}}
            ),
        },
        sort_keys=True,
    )


def score_file(model, dataset, kind="scores"):
    """A score artifact (kind: scores or ranks) of the dataset's task."""
    return artifact(f"{dataset_config(dataset)['task']}_{kind}", model=model, dataset=dataset)
