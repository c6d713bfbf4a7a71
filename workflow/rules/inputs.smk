# Input functions and option builders of the stages, one section per rule
# file, in pipeline order. They are not in the rule files because Snakemake's
# linter asks for rules and functions in separate files; what several stages
# share is in common.smk.


# --- prepare (prepare.smk)


def datasets_of_format(fmt):
    return names_matching(n for n, e in config["datasets"].items() if e["format"] == fmt)


def source_files_to_track(wildcards):
    return [
        path for setting, value in entry_settings(wildcards.dataset, FILE) for path in setting.files_to_track(value)
    ]


def prepare_settings(wildcards):
    """The entry's settings as `clipeval prepare FORMAT` options (--key value …)."""
    entry = dataset_config(wildcards.dataset)
    words = []
    for setting in SOURCE_FORMATS[entry["format"]].settings:
        if setting.key in entry:
            values = entry[setting.key] if setting.many else [entry[setting.key]]
            words += [setting.flag, *(shlex.quote(str(value)) for value in values)]
    return " ".join(words)


def image_folder_digest(wildcards):
    """A digest of the path and content of every file under a dataset's image folders.

    Snakemake cannot track a folder. Each file's sha256 is remembered with its
    size and modification time in .snakemake/clipeval-image-digests/, so a
    run hashes only new or changed files (an ImageNet-sized folder once), and
    a touched but unchanged image changes nothing.
    """
    return " ".join(folder_digest(Path(root)) for _, root in entry_settings(wildcards.dataset, FOLDER))


def folder_digest(root):
    if not root.is_dir():
        return "missing"  # the prepare command says so, naming the folder
    folder_key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    cache_file = Path(".snakemake/clipeval-image-digests") / f"{folder_key}.json"
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    fresh, total = {}, hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name, status = path.relative_to(root).as_posix(), path.stat()
        known = cache.get(name)
        if known and known[:2] == [status.st_size, status.st_mtime_ns]:
            fresh[name] = known
        else:
            fresh[name] = [status.st_size, status.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()]
        total.update(f"{name}\0{fresh[name][2]}\n".encode())
    if fresh != cache:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps(fresh))
    return total.hexdigest()[:16]


# --- train (train.smk)


def train_inputs(wildcards):
    dataset = model_config(wildcards.model)["train"]["dataset"]
    return {"texts": artifact("dataset_texts", dataset=dataset), "meta": artifact("dataset_meta", dataset=dataset)}


# --- extract (extract.smk)


def prepared_image_count(dataset):
    """Images in a prepared dataset; waits for its prepare checkpoint."""
    fmt = dataset_config(dataset)["format"]
    meta = getattr(checkpoints, f"prepare_{fmt}").get(dataset=dataset).output.meta
    with open(meta) as handle:
        return json.load(handle)["counts"]["images"]


def image_shards(wildcards):
    shard_size = config["extract"]["shard_size"]
    count = shard_count(prepared_image_count(wildcards.dataset), shard_size) if shard_size else 1
    return [
        artifact("image_shard", model=wildcards.model, dataset=wildcards.dataset, shard=index) for index in range(count)
    ]


def text_extract_inputs(wildcards):
    return {"texts": artifact("dataset_texts", dataset=wildcards.dataset), **weights_input(wildcards)}


def image_extract_inputs(wildcards):
    return {"dataset_meta": artifact("dataset_meta", dataset=wildcards.dataset), **weights_input(wildcards)}


def precomputed_feature_files(wildcards):
    return sorted({path for files in model_config(wildcards.model)["features"].values() for path in files.values()})


# --- knn (knn.smk)


def knn_inputs(wildcards):
    files = feature_files(wildcards.model, wildcards.dataset)
    return {"images": files["images"], "texts": files["texts"]}


# --- score (score.smk)


def score_inputs(wildcards):
    features = feature_files(wildcards.model, wildcards.dataset)
    inputs = {
        "texts": artifact("dataset_texts", dataset=wildcards.dataset),
        "dataset_meta": artifact("dataset_meta", dataset=wildcards.dataset),
        "model_meta": artifact("model_meta", model=wildcards.model),
        "image_feats": features["images"],
        "text_feats": features["texts"],
    }
    if retrieval_protocol(wildcards.dataset) == "full":
        # Folds rank within each fold; full-gallery top-k lists cannot be checked against that.
        inputs.update(
            {
                direction: artifact(
                    "predictions", model=wildcards.model, dataset=wildcards.dataset, direction=direction
                )
                for direction in ("t2i", "i2t")
            }
        )
    return inputs


def predictions_option(wildcards, input):
    if "t2i" in input.keys():
        return f"--t2i {shlex.quote(input.t2i)} --i2t {shlex.quote(input.i2t)}"
    return ""


# --- classify (classify.smk)


def class_encode_inputs(wildcards):
    return {"classes": artifact("dataset_classes", dataset=wildcards.dataset), **weights_input(wildcards)}


def classification_score_inputs(wildcards):
    features = feature_files(wildcards.model, wildcards.dataset)
    return {
        "images": features["images"],
        "classes": features["classes"],
        "labels": artifact("dataset_labels", dataset=wildcards.dataset),
        "class_spec": artifact("dataset_classes", dataset=wildcards.dataset),
        "dataset_meta": artifact("dataset_meta", dataset=wildcards.dataset),
        "model_meta": artifact("model_meta", model=wildcards.model),
    }


# --- compare (compare.smk)


def compared_ranks(wildcards):
    return [score_file(model, wildcards.dataset, "ranks") for model in compared_models()[wildcards.dataset]]


def comparison_options(wildcards):
    """The models' names, and the baseline when the config names one."""
    names = " ".join(shlex.quote(model) for model in compared_models()[wildcards.dataset])
    baseline = config["compare"].get("baseline")
    return f"--names {names}" + (f" --baseline {shlex.quote(baseline)}" if baseline else "")


# --- summary (summary.smk)


def score_files():
    return [score_file(model, dataset) for model, dataset in evaluation_pairs()]


def comparison_files():
    return [artifact("comparisons", dataset=dataset) for dataset in compared_models()]


def score_entries():
    return " ".join(f"--entry {model} {dataset} {score_file(model, dataset)}" for model, dataset in evaluation_pairs())


def summary_entries():
    return " ".join([score_entries()] + [f"--comparison {path}" for path in comparison_files()])


# --- report (report.smk)


def dataset_ranks(wildcards):
    return [score_file(model, wildcards.dataset, "ranks") for model in models_on(wildcards.dataset)]


def dataset_scores(wildcards):
    return [score_file(model, wildcards.dataset) for model in models_on(wildcards.dataset)]


def dataset_plot_entries(wildcards, input):
    """--entry MODEL FILE per model on the dataset, in config order (the models keep their colours)."""
    return " ".join(f"--entry {model} {path}" for model, path in zip(models_on(wildcards.dataset), input))


def gallery_options(wildcards):
    settings = config["report"]
    return f"--failures {settings['failures']} --shown {settings['shown']} --thumbnail {settings['thumbnail_size']}"


def retrieval_gallery_inputs(wildcards):
    features = feature_files(wildcards.model, wildcards.dataset)
    return {
        "images": artifact("dataset_images", dataset=wildcards.dataset),
        "texts": artifact("dataset_texts", dataset=wildcards.dataset),
        "image_feats": features["images"],
        "text_feats": features["texts"],
        "ranks": score_file(wildcards.model, wildcards.dataset, "ranks"),
    }


def classification_gallery_inputs(wildcards):
    features = feature_files(wildcards.model, wildcards.dataset)
    return {
        "images": artifact("dataset_images", dataset=wildcards.dataset),
        "image_feats": features["images"],
        "class_feats": features["classes"],
        "labels": artifact("dataset_labels", dataset=wildcards.dataset),
        "classes": artifact("dataset_classes", dataset=wildcards.dataset),
    }


def report_files():
    """Every file the report shows for this experiment, for the default target."""
    files = [artifact("results_page"), artifact("provenance_page")]
    for dataset in evaluated_datasets("retrieval"):
        files += [artifact("recall_curves", dataset=dataset), artifact("rank_distribution", dataset=dataset)]
        files += [
            artifact(name, dataset=dataset, model=model)
            for model in models_on(dataset)
            for name in ("t2i_failures", "i2t_failures")
        ]
    for dataset in evaluated_datasets("classification"):
        files.append(artifact("class_recall", dataset=dataset))
        files += [
            artifact(name, dataset=dataset, model=model)
            for model in models_on(dataset)
            for name in ("confusion", "confused_pairs")
        ]
    files += [artifact("forest_plot", dataset=dataset) for dataset in compared_models()]
    return files
