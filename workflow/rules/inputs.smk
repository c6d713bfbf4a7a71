# Input functions and option builders of the stages, one section per rule
# file, in pipeline order. They are not in the rule files because Snakemake's
# linter asks for rules and functions in separate files; what several stages
# share is in common.smk.


# --- prepare (prepare.smk)


def datasets_of_format(fmt):
    return names_matching(n for n, e in config["datasets"].items() if e["format"] == fmt)


def cnclip_sources(wildcards):
    """Source files to track; an LMDB is tracked by its data file, which Snakemake can checksum."""
    entry = dataset_config(wildcards.dataset)
    images = Path(entry["images"])
    return {"images": str(images / "data.mdb") if images.is_dir() else str(images), "texts": entry["texts"]}


def image_folder_digest(wildcards):
    """A digest of the path and content of every file under a dataset's image folder.

    Snakemake cannot track a folder. Each file's sha256 is remembered with its
    size and modification time in .snakemake/clipeval-image-digests/, so a
    run hashes only new or changed files (an ImageNet-sized folder once), and
    a touched but unchanged image changes nothing.
    """
    root = Path(dataset_config(wildcards.dataset)["images"])
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


def coco_sources(wildcards):
    entry = dataset_config(wildcards.dataset)
    sources = {"annotations": entry["annotations"]}
    if "image_ids" in entry:
        sources["image_ids"] = entry["image_ids"]
    return sources


def cifar_sources(wildcards):
    """The batch, its class-names file beside it (batches.meta or meta), and the templates."""
    entry = dataset_config(wildcards.dataset)
    batch = Path(entry["batch"])
    names = batch.parent / ("meta" if (batch.parent / "meta").exists() else "batches.meta")
    return {"batch": str(batch), "classnames": str(names), "templates": entry["templates"]}


# --- train (train.smk)


def train_inputs(wildcards):
    files = dataset_files(model_config(wildcards.model)["train"]["dataset"])
    return {"texts": files["texts"], "meta": files["meta"]}


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
    base = f"results/features/{wildcards.model}/{wildcards.dataset}/image-shards"
    return [f"{base}/{index}.jsonl" for index in range(count)]


def text_extract_inputs(wildcards):
    return {"texts": dataset_files(wildcards.dataset)["texts"], **weights_input(wildcards)}


def image_extract_inputs(wildcards):
    return {"dataset_meta": dataset_files(wildcards.dataset)["meta"], **weights_input(wildcards)}


def precomputed_feature_files(wildcards):
    return sorted({path for files in model_config(wildcards.model)["features"].values() for path in files.values()})


# --- knn (knn.smk)


def knn_inputs(wildcards):
    files = feature_files(wildcards.model, wildcards.dataset)
    return {"images": files["images"], "texts": files["texts"]}


# --- score (score.smk)


def score_inputs(wildcards):
    files = dataset_files(wildcards.dataset)
    features = feature_files(wildcards.model, wildcards.dataset)
    inputs = {
        "texts": files["texts"],
        "dataset_meta": files["meta"],
        "model_meta": f"results/models/{wildcards.model}/meta.json",
        "image_feats": features["images"],
        "text_feats": features["texts"],
    }
    if retrieval_protocol(wildcards.dataset) == "full":
        # Folds rank within each fold; full-gallery top-k lists cannot be checked against that.
        predictions = f"results/predictions/{wildcards.model}/{wildcards.dataset}"
        inputs.update(t2i=f"{predictions}/t2i.jsonl", i2t=f"{predictions}/i2t.jsonl")
    return inputs


def predictions_option(wildcards, input):
    if "t2i" in input.keys():
        return f"--t2i {shlex.quote(input.t2i)} --i2t {shlex.quote(input.i2t)}"
    return ""


# --- classify (classify.smk)


def class_encode_inputs(wildcards):
    return {"classes": f"{dataset_dir(wildcards.dataset)}/classes.json", **weights_input(wildcards)}


def classification_score_inputs(wildcards):
    features = feature_files(wildcards.model, wildcards.dataset)
    return {
        "images": features["images"],
        "classes": features["classes"],
        "labels": f"{dataset_dir(wildcards.dataset)}/labels.jsonl",
        "class_spec": f"{dataset_dir(wildcards.dataset)}/classes.json",
        "dataset_meta": dataset_files(wildcards.dataset)["meta"],
        "model_meta": f"results/models/{wildcards.model}/meta.json",
    }


# --- compare (compare.smk)


def ranks_inputs(wildcards):
    return {"first": score_file(wildcards.first, wildcards.dataset, "-ranks"),
            "second": score_file(wildcards.second, wildcards.dataset, "-ranks")}


# --- summary (summary.smk)


def score_files():
    return [score_file(model, dataset) for model, dataset in evaluation_pairs()]


def comparison_files():
    return [comparison_file(*triple) for triple in comparison_pairs()]


def summary_entries():
    entries = [f"--entry {model} {dataset} {score_file(model, dataset)}" for model, dataset in evaluation_pairs()]
    entries += [f"--comparison {comparison_file(*triple)}" for triple in comparison_pairs()]
    return " ".join(entries)
