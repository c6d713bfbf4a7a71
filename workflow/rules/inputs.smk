# Input functions and option builders of the stages, one section per rule
# file, in pipeline order. They are not in the rule files because Snakemake's
# linter asks for rules and functions in separate files; what several stages
# share is in common.smk.


# --- what several stages' jobs are given

# A shared artifact's job (prepare, train, extract, knn) has the keys of its
# model and dataset as wildcards (planning/artifacts.py); any of the config's
# names with that key stands for its definition.


def model_of(wildcards):
    return PLAN.model_named(wildcards.model_key)


def dataset_of(wildcards):
    return PLAN.dataset_named(wildcards.dataset_key)


def definition(wildcards):
    """The definitions of the model and dataset behind a shared job, and the content of the model's files, as
    a param (Plan.definition)."""
    names = wildcards.keys()
    return PLAN.definition(
        [model_of(wildcards)] if "model_key" in names else [],
        dataset_of(wildcards) if "dataset_key" in names else None,
        content_digest,
    )


def prepare_definition(wildcards):
    """definition() of a prepare job, which reads the dataset's source files and folders."""
    return PLAN.definition([], dataset_of(wildcards), content_digest, reads_sources=True)


def comparison_definition(wildcards):
    """definition() of a comparison job: every model it compares, and the dataset."""
    return PLAN.definition(PLAN.compared_models()[wildcards.dataset], wildcards.dataset, content_digest)


@functools.cache  # a folder is digested once per planning, however many jobs name it
def content_digest(kind, path):
    """A digest of a named file's or folder's content (planning/content_digests.py)."""
    return (folder_digest if kind == FOLDER else file_digest)(Path(path))


def result_config(wildcards):
    return PLAN.result_config(wildcards.model, wildcards.dataset)


def model_setting(key):
    """A param: the setting `key` of a shared job's model entry."""
    return lambda wildcards: PLAN.model(model_of(wildcards))[key]


def model_precision(wildcards):
    return PLAN.model_precision(model_of(wildcards))


def preprocess_option(wildcards):
    return PLAN.preprocess_option(model_of(wildcards))


def weights_input(wildcards):
    weights = PLAN.checkpoint_of(model_of(wildcards))
    return {"weights": weights} if weights else {}


def pretrained_option(wildcards):
    """--pretrained WEIGHTS, none when the entry gives an empty one (a local-dir: or hf-hub: arch): `:q` would
    drop an empty word and leave --pretrained without its value."""
    model = model_of(wildcards)
    pretrained = PLAN.checkpoint_of(model) or PLAN.model(model).get("pretrained")
    return ["--pretrained", pretrained] if pretrained else []


def model_keys_where(condition):
    """A wildcard constraint: the keys of the models whose entry meets `condition`."""
    return names_matching(PLAN.model_keys[name] for name, entry in config["models"].items() if condition(entry))


def dataset_artifact(name):
    """A param: a shared job's dataset artifact `name`."""
    return lambda wildcards: PLAN.artifact(name, dataset=dataset_of(wildcards))


# --- prepare (prepare.smk)


def datasets_of_format(fmt):
    return names_matching(PLAN.dataset_keys[n] for n, e in config["datasets"].items() if e["format"] == fmt)


def source_files_to_track(wildcards):
    return [
        path
        for setting, value in PLAN.entry_settings(dataset_of(wildcards), FILE)
        for path in setting.files_to_track(value)
    ]


def prepare_settings(wildcards):
    return PLAN.prepare_options(dataset_of(wildcards))


# --- train (train.smk)


def trained_model_of(wildcards):
    return PLAN.trained_model_named(wildcards.training_key)


def training_dataset(wildcards):
    return PLAN.model(trained_model_of(wildcards))["train"]["dataset"]


def train_inputs(wildcards):
    dataset = training_dataset(wildcards)
    return {
        "texts": PLAN.artifact("dataset_texts", dataset=dataset),
        "meta": PLAN.artifact("dataset_meta", dataset=dataset),
    }


def epoch_train_inputs(wildcards):
    """A series member's training also reads the state the epoch before it stopped at."""
    before = PLAN.previous_epoch(trained_model_of(wildcards))
    resume = {"resume": PLAN.artifact("training_state", model=before)} if before else {}
    return {**train_inputs(wildcards), **resume}


def train_setting(key):
    return lambda wildcards: PLAN.model(trained_model_of(wildcards))["train"][key]


# A training's optional settings as its command's options (models/training.py has their defaults).
TRAINING_OPTIONS = {
    "from": "--from",
    "warmup": "--warmup",
    "weight_decay": "--weight-decay",
    "freeze": "--freeze",
    "precision": "--precision",
    "device": "--device",
    "epoch": "--stop-after",
}


def training_options(wildcards):
    train = PLAN.model(trained_model_of(wildcards))["train"]
    words = []
    for key, flag in TRAINING_OPTIONS.items():
        if key in train:
            values = train[key] if isinstance(train[key], list) else [train[key]]
            words += [flag, *(str(value) for value in values)]
    return words


def training_params():
    """What both training rules give their command, and what decides their checkpoint beyond its key."""
    return {
        "arch": trained_arch,
        "dataset_dir": lambda wildcards, input: str(Path(input.meta).parent),
        "epochs": train_setting("epochs"),
        "batch_size": train_setting("batch_size"),
        "lr": train_setting("lr"),
        "seed": train_setting("seed"),
        "options": training_options,
        "dataset_definition": training_dataset_definition,
        "start_weights": start_weights,
        "numerics": config["numerics"],
        "code": code_fingerprint("train"),
    }


def start_weights(wildcards):
    """The digest of the checkpoint a fine-tune starts from (an open_clip tag is in the model's definition)."""
    model = trained_model_of(wildcards)
    return [content_digest(kind, path) for kind, path in PLAN.model_inputs([model])]


def trained_arch(wildcards):
    return PLAN.model(trained_model_of(wildcards))["arch"]


def training_dataset_definition(wildcards):
    return json.dumps(PLAN.dataset_identity(training_dataset(wildcards)), sort_keys=True)


# --- extract (extract.smk)


def prepared_image_count(dataset):
    """Images in a prepared dataset; waits for its prepare checkpoint."""
    fmt = PLAN.dataset(dataset)["format"]
    meta = getattr(checkpoints, f"prepare_{fmt}").get(dataset_key=PLAN.dataset_keys[dataset]).output.meta
    with open(meta) as handle:
        return json.load(handle)["counts"]["images"]


def image_shards(wildcards):
    model, dataset = model_of(wildcards), dataset_of(wildcards)
    shard_size = config["extract"]["shard_size"]
    count = shard_count(prepared_image_count(dataset), shard_size) if shard_size else 1
    return [PLAN.artifact("image_shard", model=model, dataset=dataset, shard=index) for index in range(count)]


def text_extract_inputs(wildcards):
    return {"texts": PLAN.artifact("dataset_texts", dataset=dataset_of(wildcards)), **weights_input(wildcards)}


def model_pixel_recipe(model):
    """The pixel recipe describe-model found for a model's preprocessing, or None (its extraction decodes the
    images itself); waits for the describe_model checkpoint. A description written before the pixel stage
    names none: its job re-runs (its code changed) and the recipe is read then."""
    with open(checkpoints.describe_model.get(model_key=PLAN.model_keys[model]).output.meta) as handle:
        return json.load(handle).get("pixels")


def pixel_shards(wildcards):
    """The pixel shards an extraction shard reads: the same for every model of one recipe."""
    recipe = model_pixel_recipe(model_of(wildcards))
    if recipe is None:
        return []
    dataset = dataset_of(wildcards)
    shard_size = config["extract"]["shard_size"]
    count = prepared_image_count(dataset) if shard_size else 0
    return [
        PLAN.artifact("pixel_shard", dataset=dataset, recipe=recipe, shard=index)
        for index in pixel_shards_read(int(wildcards.shard), shard_size, count)
    ]


def image_extract_inputs(wildcards):
    return {
        "dataset_meta": PLAN.artifact("dataset_meta", dataset=dataset_of(wildcards)),
        "pixels": pixel_shards(wildcards),
        **weights_input(wildcards),
    }


def pixels_option(wildcards, input):
    """--pixels SHARD…; none while the describe_model checkpoint has not yet said the model's recipe."""
    pixels = getattr(input, "pixels", [])
    return ["--pixels", *pixels] if pixels else []


def precomputed_feature_files(wildcards):
    return sorted({path for files in PLAN.model(model_of(wildcards))["features"].values() for path in files.values()})


# --- knn (knn.smk)


def knn_inputs(wildcards):
    files = PLAN.feature_files(model_of(wildcards), dataset_of(wildcards))
    return {"images": files["images"], "texts": files["texts"]}


# --- score (score.smk)


def score_inputs(wildcards):
    return PLAN.score_inputs(wildcards.model, wildcards.dataset)


def task_file_options(files):
    """--INPUT FILE for each of a job's files (its underscores as dashes)."""
    return [word for name, path in files.items() for word in (f"--{name.replace('_', '-')}", path)]


def score_arguments(wildcards, input):
    """--INPUT FILE for each of the score job's files, then its task's options."""
    return [*task_file_options(input), *PLAN.score_options(wildcards.dataset)]


# --- classify (classify.smk)


def class_encode_inputs(wildcards):
    return {"classes": PLAN.artifact("dataset_classes", dataset=dataset_of(wildcards)), **weights_input(wildcards)}


# --- compare (compare.smk)


def compared_ranks(wildcards):
    return [PLAN.score_file(model, wildcards.dataset, "ranks") for model in PLAN.compared_models()[wildcards.dataset]]


def comparison_arguments(wildcards, input):
    """The ranks files and the models' names, in an arguments file (planning/argument_files.py)."""
    return written_or_fail(argument_file, [*input.ranks, *PLAN.comparison_options(wildcards.dataset)])


def suite_entries(suite):
    return [
        (model, dataset, PLAN.score_file(model, dataset, "ranks"))
        for dataset in PLAN.suites()[suite]
        for model in PLAN.suite_models(suite)
    ]


def suite_ranks(wildcards):
    return [path for _, _, path in suite_entries(wildcards.suite)]


def suite_arguments(wildcards):
    """--entry MODEL DATASET RANKS per pair of the suite, --benchmark DATASET NAME per dataset that names its
    benchmark (published:), and the baseline, in an arguments file."""
    words = [word for entry in suite_entries(wildcards.suite) for word in ("--entry", *entry)]
    for dataset in PLAN.suites()[wildcards.suite]:
        benchmark = config["datasets"][dataset].get("published")
        words += ["--benchmark", dataset, benchmark] if benchmark else []
    baseline = config["compare"].get("baseline")
    return written_or_fail(argument_file, words + (["--baseline", baseline] if baseline else []))


def suite_score_files(wildcards):
    return [PLAN.score_file(model, dataset) for model, dataset, _ in suite_entries(wildcards.suite)]


def suite_plot_arguments(wildcards):
    """--entry MODEL DATASET SCORES per pair of the suite, in an arguments file."""
    words = [
        word
        for model, dataset, _ in suite_entries(wildcards.suite)
        for word in ("--entry", model, dataset, PLAN.score_file(model, dataset))
    ]
    return written_or_fail(argument_file, words)


def suite_files():
    return [PLAN.artifact("suite_scores", suite=suite) for suite in PLAN.suites()]


def suite_options():
    return [word for path in suite_files() for word in ("--suite", path)]


# --- summary (summary.smk)


def score_files():
    return [PLAN.score_file(model, dataset) for model, dataset in PLAN.evaluation_pairs()]


def tokenization_files():
    return [
        PLAN.artifact("text_tokenization", model=model, dataset=dataset) for model, dataset in PLAN.tokenization_pairs()
    ]


def comparison_files():
    return [PLAN.artifact("comparisons", dataset=dataset) for dataset in PLAN.compared_models()]


def score_entries():
    return [
        word
        for model, dataset in PLAN.evaluation_pairs()
        for word in ("--entry", model, dataset, PLAN.score_file(model, dataset))
    ]


def summary_arguments(wildcards):
    """--entry … per pair and --comparison … per dataset, in an arguments file (planning/argument_files.py): a
    sweep's list outgrows a command line."""
    comparisons = [word for path in comparison_files() for word in ("--comparison", path)]
    series = [
        word
        for name, members in PLAN.checkpoint_series().items()
        for step, model in members
        for word in ("--series-member", name, str(step), model)
    ]
    tokenization = [
        word
        for (model, dataset), path in zip(PLAN.tokenization_pairs(), tokenization_files())
        for word in ("--tokenization", model, dataset, path)
    ]
    return written_or_fail(argument_file, score_entries() + comparisons + series + suite_options() + tokenization)


def report_table_arguments(wildcards):
    return written_or_fail(argument_file, score_entries() + suite_options())


# --- report (report.smk)


def report_inputs(job):
    """A task's report job's input function: every model's score files or ranks records of the dataset, or the
    files its record names of one model's results."""
    if job.per_model:
        return lambda wildcards: PLAN.task_files(wildcards.model, wildcards.dataset, job.inputs)
    return lambda wildcards: {
        "entries": [
            PLAN.score_file(model, wildcards.dataset, job.entries) for model in PLAN.models_on(wildcards.dataset)
        ]
    }


def report_arguments(job):
    """A report job's files: over all models, --entry MODEL FILE per model in config order (the models keep
    their colours) in an arguments file; per model, the gallery's title and files."""

    def arguments(wildcards, input):
        if job.per_model:
            return ["--title", f"{wildcards.model} on {wildcards.dataset}", *task_file_options(input)]
        models = PLAN.models_on(wildcards.dataset)
        entries = [word for model, path in zip(models, input.entries) for word in ("--entry", model, path)]
        return ["--dataset", wildcards.dataset, "--arguments-file", written_or_fail(argument_file, entries)]

    return arguments


def report_options(job):
    """A report job's options for the config's report settings: a param of its own, not derived from its input,
    so that Snakemake re-runs the job when they change."""
    return lambda wildcards: PLAN.report_options(job)


def report_figure_options(job):
    """A report job's figures as OPTION FILE, the options its record names."""
    return lambda wildcards, output: [
        word for name, (option, _) in job.figures.items() for word in (option, getattr(output, name))
    ]


def report_job_outputs(job):
    """A report job's outputs: its figures in the report (each captioned by workflow/report/FIGURE.rst, under its
    dataset, and its model where per model), and the numbers beside them."""
    subcategory = "{model}" if job.per_model else "all models"
    figures = {
        name: report(
            PLAN.experiment_artifact(name),
            caption=f"../report/{name}.rst",
            category="{dataset}",
            subcategory=subcategory,
            labels={"figure": label},
        )
        for name, (_, label) in job.figures.items()
    }
    return {**figures, **{name: PLAN.experiment_artifact(name) for name in job.data}}


def report_files():
    """Every file the report shows for this experiment, for the default target."""
    files = [PLAN.artifact("results_page"), PLAN.artifact("provenance_page")]
    for task in TASKS.values():
        for dataset in PLAN.evaluated_datasets(task.name):
            files += [PLAN.artifact(name, dataset=dataset) for name in task.figures]
            files += [
                PLAN.artifact(name, dataset=dataset, model=model)
                for model in PLAN.models_on(dataset)
                for name in task.model_figures
            ]
    files += [PLAN.artifact("forest_plot", dataset=dataset) for dataset in PLAN.compared_models()]
    files += [PLAN.artifact("series_plot", series=series) for series in PLAN.checkpoint_series()]
    files += [PLAN.artifact("suite_plot", suite=suite) for suite in PLAN.suites()]
    return files
