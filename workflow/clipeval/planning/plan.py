"""One experiment's config, read: its models and datasets, the pairs it evaluates and compares, the settings
behind each result, its record, and the options its jobs are given.

A `Plan` holds the config Snakemake has validated (schema defaults filled in)
and the config files it came from; nothing here needs Snakemake.
"""

import functools
import json
from collections.abc import Callable
from pathlib import Path

from clipeval.data.sources import FILE, FOLDER, format_names, source_format
from clipeval.errors import ClipevalError
from clipeval.metric_catalog import DEFAULT_RANKING_AT, DEFAULT_RECALL_AT
from clipeval.models.pretrained import is_checkpoint_path, parse_model_name
from clipeval.planning.artifacts import ARTIFACTS, artifact_path, experiment_artifact_pattern
from clipeval.planning.keys import definition_key
from clipeval.planning.series import EPOCH, SERIES_KEY
from clipeval.tasks import TASKS, Task

# The tasks a dataset may have that are scored (clipeval.tasks); `train` and `probe_train` datasets are read
# only to fit a model or a probe.
EVALUATED_TASKS = tuple(TASKS)
# Dataset keys that say how a dataset is scored, not what is in it.
SCORING_KEYS = ("task", "protocol", "train_split", "published")
# Every source format (workflow/clipeval/data/sources/), by its config name.
SOURCE_FORMATS = {name: source_format(name) for name in format_names()}


class ConfigError(ClipevalError):
    """A mistake in the config: one line naming the key (the workflow prints it as `config error: …`)."""


def fill_metric_defaults(config: dict) -> None:
    """The K values of R@K and of the ranking metrics (the metric catalogue's unless the config names them), and
    top-k lists as deep as the largest K of R@K unless knn.top_k is set."""
    config["metrics"].setdefault("recall_at", list(DEFAULT_RECALL_AT))
    config["metrics"].setdefault("ranking_at", list(DEFAULT_RANKING_AT))
    config["knn"].setdefault("top_k", max(config["metrics"]["recall_at"]))


class Plan:
    def __init__(self, config: dict, config_files: list[str], experiment: str | None = None):
        """`experiment`: the folder under results/experiments/ this run writes to, when it is not the configured
        name (another config's experiment holds that: experiments.experiment_folder)."""
        self.config = config
        self.config_files = config_files
        self.experiment = experiment

    # --- the config's entries

    def dataset(self, name: str) -> dict:
        if name not in self.config["datasets"]:
            raise ConfigError(f"unknown dataset {name!r} (known: {', '.join(self.config['datasets'])})")
        return self.config["datasets"][name]

    def model(self, name: str) -> dict:
        if name not in self.config["models"]:
            raise ConfigError(f"unknown model {name!r} (known: {', '.join(self.config['models'])})")
        return self.config["models"][name]

    def checkpoint_series(self) -> dict[str, list[tuple[int, str]]]:
        """{series: [(step, model), …] in step order}, of the config's checkpoint series (planning/series.py)."""
        return {
            name: [tuple(member) for member in members] for name, members in self.config.get(SERIES_KEY, {}).items()
        }

    def model_backends(self, models: list[str]) -> list[str]:
        """The modules of clipeval.models that build these models (their backends, models/build.py); a model of
        precomputed features has none."""
        return sorted({self.model_name(name).backend.module for name in models if self.model(name).get("arch")})

    def model_name(self, name: str):
        """The model's arch, parsed (models/pretrained.ModelName)."""
        return parse_model_name(self.model(name).get("arch", ""))

    def is_features_model(self, name: str) -> bool:
        return "features" in self.model(name)

    def precomputed_features(self, model: str, dataset: str) -> dict:
        """A features model's files for one dataset (the checks have matched them with its task)."""
        return self.model(model)["features"][dataset]

    def entry_settings(self, dataset: str, kind) -> list:
        """(setting, value) for each setting of this kind (FILE, FOLDER, VALUE) that a dataset's entry gives."""
        entry = self.dataset(dataset)
        return [
            (setting, entry[setting.key])
            for setting in SOURCE_FORMATS[entry["format"]].settings
            if setting.kind == kind and setting.key in entry
        ]

    def model_precision(self, model: str) -> str:
        return self.model(model).get("precision", self.config["extract"]["precision"])

    def checkpoint_of(self, model: str) -> str | None:
        """The weights file a model's extraction depends on, if it is local."""
        entry = self.model(model)
        if "train" in entry:
            return self.artifact("checkpoint", model=model)
        return entry["pretrained"] if is_checkpoint_path(entry["pretrained"]) else None

    # --- what decides the content of shared artifacts, and their keys

    def dataset_identity(self, name: str) -> dict:
        """What decides a prepared dataset's content: its entry with its format's defaults filled in, without
        the keys that say how it is scored."""
        entry = self.dataset(name)
        settings = SOURCE_FORMATS[entry["format"]].settings
        defaults = {setting.key: setting.default for setting in settings if setting.default is not None}
        return {**defaults, **{key: value for key, value in entry.items() if key not in SCORING_KEYS}}

    def model_identity(self, name: str) -> dict:
        """What decides a model's checkpoint and features (model_definition), the datasets it names (to train
        on, of its precomputed features) by their keys: their names are this config's own."""
        definition = self.model_definition(name)
        if "train" in definition:
            dataset = self.dataset_keys[definition["train"]["dataset"]]
            definition = {**definition, "train": {**definition["train"], "dataset": dataset}}
        if "features" in definition:
            features = {self.dataset_keys[dataset]: files for dataset, files in definition["features"].items()}
            definition = {**definition, "features": features}
        return definition

    def training_identity(self, name: str) -> dict:
        """What decides a trained model's checkpoint: its arch, training settings and numerics, not how its
        features are extracted."""
        identity = self.model_identity(name)
        return {key: identity[key] for key in ("arch", "train", "numerics")}

    @functools.cached_property
    def dataset_keys(self) -> dict[str, str]:
        return {name: definition_key(self.dataset_identity(name)) for name in self.config["datasets"]}

    @functools.cached_property
    def model_keys(self) -> dict[str, str]:
        return {name: definition_key(self.model_identity(name)) for name in self.config["models"]}

    @functools.cached_property
    def training_keys(self) -> dict[str, str]:
        """{model: key} of the models this config trains."""
        trained = [name for name, entry in self.config["models"].items() if "train" in entry]
        return {name: definition_key(self.training_identity(name)) for name in trained}

    def training_keys_at_once(self) -> list[str]:
        """The keys of the trainings one job runs whole."""
        return [key for name, key in self.training_keys.items() if EPOCH not in self.model(name)["train"]]

    def training_keys_by_epoch(self) -> list[str]:
        """The keys of the epochs of trained series, one job each."""
        return [key for name, key in self.training_keys.items() if EPOCH in self.model(name)["train"]]

    def dataset_named(self, key: str) -> str:
        """The first dataset, in config order, whose definition has this key: any of them defines its content."""
        return _first_with(self.dataset_keys, key, "dataset")

    def model_named(self, key: str) -> str:
        return _first_with(self.model_keys, key, "model")

    def trained_model_named(self, key: str) -> str:
        return _first_with(self.training_keys, key, "trained model")

    def previous_epoch(self, model: str) -> str | None:
        """The member of a trained series (planning/series.py) whose state an epoch's training resumes from: the
        epoch before, none for the first or a model trained at once."""
        epoch = self.model(model)["train"].get(EPOCH, 1)
        if epoch == 1:
            return None
        return next(
            before
            for members in self.checkpoint_series().values()
            for (step, before), (_, this) in zip(members, members[1:])
            if this == model
        )

    # --- what is evaluated and compared

    def evaluation_pairs(self) -> list[tuple[str, str]]:
        """(model, dataset) pairs, in config order."""
        if "evaluate" in self.config:
            return [(entry["model"], entry["dataset"]) for entry in self.config["evaluate"]]
        return [
            (model, dataset)
            for model in self.config["models"]
            for dataset, entry in self.config["datasets"].items()
            if entry["task"] in EVALUATED_TASKS
            and (not self.is_features_model(model) or dataset in self.config["models"][model]["features"])
        ]

    def extracted_pairs(self) -> list[tuple[str, str]]:
        """The evaluation pairs, each probe's followed by its model on the probe's train split (once)."""
        pairs = []
        for model, dataset in self.evaluation_pairs():
            pairs.append((model, dataset))
            if self.task(dataset).fitted:
                pairs.append((model, self.train_split(dataset)))
        return list(dict.fromkeys(pairs))

    def task(self, dataset: str) -> Task:
        """The task an evaluated dataset is scored by."""
        return TASKS[self.dataset(dataset)["task"]]

    def evaluated_datasets(self, task: str) -> list[str]:
        """The datasets of one task that some model is evaluated on, in config order."""
        pairs = {dataset for _, dataset in self.evaluation_pairs()}
        return [name for name, entry in self.config["datasets"].items() if entry["task"] == task and name in pairs]

    def suites(self) -> dict[str, list[str]]:
        """{suite: its datasets}, as the config's `suites` names them."""
        return dict(self.config.get("suites", {}))

    def suite_models(self, suite: str) -> list[str]:
        """The models evaluated on every dataset of a suite, in config order."""
        pairs = set(self.evaluation_pairs())
        datasets = self.suites()[suite]
        return [model for model in self.config["models"] if all((model, d) in pairs for d in datasets)]

    def models_on(self, dataset: str) -> list[str]:
        """The models evaluated on a dataset, in config order."""
        return [model for model, evaluated in self.evaluation_pairs() if evaluated == dataset]

    def compared_models(self) -> dict[str, list[str]]:
        """{dataset: the models compared on it, in config order}: datasets with two models or more.

        With `compare.baseline`, only datasets the baseline is evaluated on: each
        other model there is compared with it.
        """
        by_dataset = {}
        for model, dataset in self.evaluation_pairs():
            by_dataset.setdefault(dataset, []).append(model)
        baseline = self.config["compare"].get("baseline")
        return {
            dataset: models
            for dataset, models in by_dataset.items()
            if len(models) > 1 and (baseline is None or baseline in models)
        }

    # --- the experiment

    def configured_experiment_name(self) -> str:
        """The config's `experiment`, else its (last) config file's name without .yaml."""
        return self.config.get("experiment") or Path(self.config_files[-1]).stem

    def experiment_name(self) -> str:
        """The experiment this run writes: the configured name unless another config's experiment holds it."""
        return self.experiment or self.configured_experiment_name()

    def model_definition(self, name: str) -> dict:
        """A model's entry and the settings that shape its checkpoint and features."""
        if self.is_features_model(name):
            return self.model(name)
        return {**self.model(name), "precision": self.model_precision(name), "numerics": self.config["numerics"]}

    def scoring_settings(self, dataset: str) -> dict:
        """The settings beyond the model and dataset entries that shape a pair's predictions and scores: the
        bootstrap's, and those its task is scored with."""
        metrics = {key: self.config["metrics"][key] for key in ("bootstrap", "bootstrap_seed")}
        task = self.task(dataset)
        own = dict(task.scored_with(self.config, self.dataset(dataset))) if task.scored_with else {}
        metrics.update(own.pop("metrics", {}))
        return {"metrics": metrics, **own}

    def checks_predictions(self, dataset: str) -> bool:
        """Whether a dataset's scores are checked against knn's top-k lists, which knn then writes."""
        check = self.task(dataset).checks_predictions
        return bool(check) and check(self.scoring_settings(dataset))

    def experiment_record(self) -> dict:
        """What this experiment defines and where its shared artifacts are, for results/experiments/NAME/."""
        pairs = self.evaluation_pairs()
        return {
            "experiment": self.experiment_name(),
            "config_files": self.config_files,
            "datasets": self.config["datasets"],
            "models": {name: self.model_definition(name) for name in self.config["models"]},
            "scores": {f"{model} on {dataset}": self.scoring_settings(dataset) for model, dataset in pairs},
            "folders": {
                "datasets": {name: _folder(self.artifact("dataset_meta", dataset=name)) for name in self.dataset_keys},
                "models": {name: _folder(self.artifact("model_meta", model=name)) for name in self.model_keys},
                "checkpoints": {name: self.artifact("checkpoint", model=name) for name in self.training_keys},
                "features": {
                    f"{model} on {dataset}": _folder(self.feature_files(model, dataset)["images"])
                    for model, dataset in self.extracted_pairs()
                    if not self.is_features_model(model)
                },
                "predictions": {
                    f"{model} on {dataset}": _folder(
                        self.artifact("predictions", model=model, dataset=dataset, direction="t2i")
                    )
                    for model, dataset in pairs
                    if self.checks_predictions(dataset)
                },
            },
            "config": self.config,
        }

    # --- paths

    def artifact(self, name: str, **wildcards) -> str:
        """An artifact's path; a shared one's `model` and `dataset` names become their keys, its `top_k` and
        `shard_size` this config's (a checkpoint's key is its training's: training_keys)."""
        if name in ARTIFACTS:
            if "model" in wildcards:
                model = wildcards.pop("model")
                wildcards["model_key"] = self.model_keys[model]
                if model in self.training_keys:
                    wildcards["training_key"] = self.training_keys[model]
            if "dataset" in wildcards:
                wildcards["dataset_key"] = self.dataset_keys[wildcards.pop("dataset")]
            pattern = ARTIFACTS[name]
            if "{top_k}" in pattern:
                wildcards.setdefault("top_k", self.config["knn"]["top_k"])
            if "{shard_size}" in pattern:
                wildcards.setdefault("shard_size", self.config["extract"]["shard_size"])
        return artifact_path(self.experiment_name(), name, **wildcards)

    def experiment_artifact(self, name: str) -> str:
        """The path pattern of one of this experiment's own files, its wildcards left in."""
        return experiment_artifact_pattern(self.experiment_name(), name)

    def feature_files(self, model: str, dataset: str) -> dict:
        """{images, texts | classes}: a model's features for a dataset, extracted or precomputed."""
        if self.is_features_model(model):
            return self.precomputed_features(model, dataset)
        return {
            kind: self.artifact(f"{item}_features", model=model, dataset=dataset)
            for kind, item in (("images", "image"), ("texts", "text"), ("classes", "class"))
        }

    def tokenization_pairs(self) -> list[tuple[str, str]]:
        """The evaluation pairs whose captions a model's own tokenizer reads: an extracted model on a dataset
        of captions."""
        return [
            (model, dataset)
            for model, dataset in self.evaluation_pairs()
            if not self.is_features_model(model) and self.task(dataset).captioned
        ]

    def train_split(self, dataset: str) -> str:
        """The dataset a fitted task's dataset is fitted on (its train_split)."""
        return self.dataset(dataset)["train_split"]

    def score_inputs(self, model: str, dataset: str) -> dict[str, str]:
        """{input: path} of a pair's score job: its task's score_inputs, the dataset's and model's metadata, and
        knn's top-k lists where its scores are checked against them."""
        inputs = self.task_files(model, dataset, self.task(dataset).score_inputs)
        inputs["dataset_meta"] = self.artifact("dataset_meta", dataset=dataset)
        inputs["model_meta"] = self.artifact("model_meta", model=model)
        if self.checks_predictions(dataset):
            for direction in ("t2i", "i2t"):
                inputs[direction] = self.artifact("predictions", model=model, dataset=dataset, direction=direction)
        return inputs

    def task_files(self, model: str, dataset: str, files: dict[str, str]) -> dict[str, str]:
        """{input: path} of a task record's {input: file} for a model's results on a dataset (tasks/__init__.py:
        score_inputs names the files)."""
        paths = {}
        for name, file in files.items():
            source = dataset
            if file.startswith("train_split/"):
                source, file = self.train_split(dataset), file.removeprefix("train_split/")
            if file == "ranks":
                paths[name] = self.score_file(model, source, "ranks")
            elif file.startswith("features/"):
                paths[name] = self.feature_files(model, source)[file.removeprefix("features/")]
            else:
                paths[name] = self.artifact(file, dataset=source)
        return paths

    def score_options(self, dataset: str) -> list[str]:
        """A dataset's score command's options beyond its files: its task's settings', then the bootstrap's."""
        task = self.task(dataset)
        own = task.score_options(self.scoring_settings(dataset)) if task.score_options else []
        return [*own, *self.interval_options()]

    def score_file(self, model: str, dataset: str, kind: str = "scores") -> str:
        """A score artifact (kind: scores or ranks) of the dataset's task."""
        return self.artifact(f"{self.dataset(dataset)['task']}_{kind}", model=model, dataset=dataset)

    # --- what each job is given

    def definition(
        self,
        models: list[str],
        dataset: str | None,
        content: Callable[[str, str], str] | None = None,
        reads_sources: bool = False,
    ) -> str:
        """The definitions of the models and dataset behind a job (without their names: a shared job is the same
        job whatever a config calls them), as a param; with `content(kind, path)`
        also the digests of the files and folders of the config that the job reads itself: the models' (their
        checkpoints, weights folders and precomputed features), and the dataset's source files and folders
        when it `reads_sources` (its prepare job).

        Snakemake does not re-run a job whose outputs exist when an input is
        missing (say a failed re-training deleted the checkpoint), nor one whose
        input changed but is dated before its outputs (results dated ahead by a
        clock, then dated now): such a change must reach the job's own params.
        The jobs after it need not see it: a job that runs re-runs every job
        that reads its outputs.
        """
        entry = {"models": [self.model_identity(name) for name in models]}
        if dataset is not None:
            entry["dataset"] = self.dataset_identity(dataset)
        if content is not None:
            read = self.model_inputs(models) + (self.dataset_inputs(dataset) if reads_sources else [])
            entry["content"] = {path: content(kind, path) for kind, path in read}
        return json.dumps(entry, sort_keys=True)

    def model_inputs(self, models: list[str]) -> list[tuple[str, str]]:
        """(FILE or FOLDER, path) of each file and folder the config names for these models: a checkpoint, the
        folder the arch loads from (local-dir:, a cached hf-hub snapshot), precomputed features. A trained
        checkpoint is the workflow's own output, not named here."""
        named = []
        for name in models:
            entry = self.model(name)
            folder = self.model_name(name).folder
            if folder is not None:
                named.append((FOLDER, str(folder)))
            if "train" not in entry and is_checkpoint_path(entry.get("pretrained", "")):
                named.append((FILE, entry["pretrained"]))
            if is_checkpoint_path(entry.get("train", {}).get("from", "")):
                named.append((FILE, entry["train"]["from"]))
            named += [(FILE, path) for files in entry.get("features", {}).values() for path in files.values()]
        return named

    def dataset_inputs(self, dataset: str) -> list[tuple[str, str]]:
        """(FILE or FOLDER, path) of a dataset's source files and image folders."""
        files = [
            (FILE, path)
            for setting, value in self.entry_settings(dataset, FILE)
            for path in setting.files_to_track(value)
        ]
        return files + [(FOLDER, str(value)) for _, value in self.entry_settings(dataset, FOLDER)]

    def result_config(self, model: str, dataset: str) -> str:
        """The config that determines a score, recorded in its provenance."""
        entry = self.model(model)
        if self.is_features_model(model):
            entry = {"features": {dataset: self.precomputed_features(model, dataset)}}
        return json.dumps(
            {
                "model": {"name": model, **entry},
                "dataset": {"name": dataset, **self.dataset(dataset)},
                **self.scoring_settings(dataset),
                **({} if self.is_features_model(model) else {"extract": {"precision": self.model_precision(model)}}),
            },
            sort_keys=True,
        )

    def prepare_options(self, dataset: str) -> list[str]:
        """The entry's settings as `clipeval prepare FORMAT` arguments (--key value …)."""
        entry = self.dataset(dataset)
        words = []
        for setting in SOURCE_FORMATS[entry["format"]].settings:
            if setting.key in entry:
                values = entry[setting.key] if setting.many else [entry[setting.key]]
                words += [setting.flag, *(str(value) for value in values)]
        return words

    def preprocess_option(self, model: str) -> list[str]:
        preprocess = self.model(model).get("preprocess")
        return ["--preprocess", json.dumps(preprocess, sort_keys=True)] if preprocess else []

    def interval_options(self) -> list[str]:
        metrics = self.config["metrics"]
        return ["--bootstrap", str(metrics["bootstrap"]), "--seed", str(metrics["bootstrap_seed"])]

    def comparison_options(self, dataset: str) -> list[str]:
        """The models' names, and the baseline when the config names one."""
        baseline = self.config["compare"].get("baseline")
        return ["--names", *self.compared_models()[dataset], *(["--baseline", baseline] if baseline else [])]

    def report_options(self, job) -> list[str]:
        """A report job's options for the config's report settings (its record's)."""
        return job.options(self.config["report"]) if job.options else []


def _first_with(keys: dict[str, str], key: str, kind: str) -> str:
    for name, its_key in keys.items():
        if its_key == key:
            return name
    raise ConfigError(f"no {kind} of this config has the key {key!r}")


def _folder(path: str) -> str:
    return str(Path(path).parent)
