"""The ready configs in config/examples/ are valid and name real open_clip models."""

import json
import os
from pathlib import Path

import open_clip
import pytest
import yaml
from conftest import REPO

from clipeval.data.sources import FILE, FOLDER, format_names, source_format
from clipeval.models.pretrained import is_checkpoint_path, parse_model_name
from clipeval.planning.config_errors import config_error
from clipeval.planning.plan import EVALUATED_TASKS

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(3)]

EXAMPLES = sorted((REPO / "config/examples").glob("*.yaml"))


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {
        "flickr30k-1k",
        "coco-5k",
        "coco-1k",
        "muge",
        "flickr30k-cn",
        "coco-cn",
        "cifar10",
        "cifar100",
        "imagenet-1k-val",
        "coco-val2017",
        "local-checkpoint",
        "checkpoint-series",
        "fine-tune",
        "precomputed-features",
        "probe-cifar10",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_validates_and_names_known_weights(path):
    config = yaml.safe_load(path.read_text())
    assert config_error(config, yaml.safe_load((REPO / "config/schema.yaml").read_text()), format_names()) is None
    known = set(open_clip.list_pretrained())
    header = " ".join(line.lstrip("# ") for line in path.read_text().splitlines() if line.startswith("#"))
    for name, model in config["models"].items():
        weights = model.get("pretrained") or model.get("train", {}).get("from")  # a fine-tune starts from weights
        if weights and not is_checkpoint_path(weights):
            assert (model["arch"], weights) in known, name
            # What cannot run offline before its first download says so, and what it downloads.
            assert "Needs the network on its first run" in header and f"{model['arch']} {weights}" in header
    assert path.read_text().startswith("# "), "each example says where its files come from"
    assert f"# Run: make run CONFIG=config/examples/{path.name}\n" in path.read_text()


def test_the_examples_cover_every_format_a_local_checkpoint_and_precomputed_features():
    configs = [yaml.safe_load(path.read_text()) for path in EXAMPLES]
    assert {d["format"] for c in configs for d in c["datasets"].values()} == set(format_names()) - {"shapes"}
    models = [m for c in configs for m in c["models"].values()]
    assert any(is_checkpoint_path(m.get("pretrained", "")) for m in models)
    assert any("features" in m for m in models)
    assert any(parse_model_name(m.get("arch", "")).folder for m in models)


def create_named_inputs(workdir, config):
    """Empty stand-ins for every file and folder an example names, enough for a dry run."""
    for entry in config["datasets"].values():
        for setting in source_format(entry["format"]).settings:
            if setting.key in entry and setting.kind in (FILE, FOLDER):
                path = workdir / entry[setting.key]
                if setting.kind == FOLDER:
                    path.mkdir(parents=True, exist_ok=True)
                else:  # the file and any it brings along (CIFAR's meta file beside its batch)
                    for tracked in setting.files_to_track(entry[setting.key]):
                        (workdir / tracked).parent.mkdir(parents=True, exist_ok=True)
                        (workdir / tracked).touch()
    for model in config["models"].values():
        if model.get("arch", "").startswith("hf-transformers:"):
            (workdir / parse_model_name(model["arch"]).folder).mkdir(parents=True, exist_ok=True)
            (workdir / parse_model_name(model["arch"]).folder / "config.json").write_text("{}")
        paths = [model["pretrained"]] if is_checkpoint_path(model.get("pretrained", "")) else []
        paths += [model["checkpoints"].replace("[0-9]*", str(step)) for step in SERIES_STEPS if "checkpoints" in model]
        paths += [p for files in model.get("features", {}).values() for p in files.values()]
        for path in paths:
            (workdir / path).parent.mkdir(parents=True, exist_ok=True)
            (workdir / path).touch()


# The files a checkpoint series' stand-ins are made for: `epoch_[0-9]*.pt` becomes epoch_1.pt and epoch_2.pt.
SERIES_STEPS = (1, 2)


def model_count(config) -> int:
    """The models a config's entries become: a series of checkpoints as many as its stand-in files, a series of
    trained epochs one an epoch."""
    return sum(members(model) for model in config["models"].values())


def members(model) -> int:
    if "checkpoints" in model:
        return len(SERIES_STEPS)
    return model["train"]["epochs"] if model.get("train", {}).get("every_epoch") else 1


EXTRACTED = {
    "describe_model": 1,
    "extract_text_features": 1,
    "extract_image_shard": 1,
    "gather_image_features": 1,
    "knn": 2,
    "score_retrieval": 1,
}
# The report of one retrieval dataset, with a gallery per model and, for two models, their forest plot.
REPORT = {"report_tables": 1, "plot_retrieval": 1, "retrieval_failures": 1}
REPORT_TWO = {**REPORT, "retrieval_failures": 2, "plot_comparisons": 1}


@pytest.mark.parametrize(
    "example, jobs",
    [
        ("flickr30k-cn", {"prepare_cnclip": 1, **EXTRACTED, "summary": 1, "all": 1, **REPORT}),
        ("coco-val2017", {"prepare_coco": 1, **EXTRACTED, "summary": 1, "all": 1, **REPORT}),
        (
            "local-checkpoint",
            {
                "prepare_karpathy": 1,
                **{rule: 2 * n for rule, n in EXTRACTED.items()},
                "compare_models": 1,
                "summary": 1,
                "all": 1,
                **REPORT_TWO,
            },
        ),
        # The features model adds its description, knn, score and a comparison: nothing to extract.
        (
            "precomputed-features",
            {
                "prepare_cnclip": 1,
                **EXTRACTED,
                "describe_features_model": 1,
                "knn": 4,
                "score_retrieval": 2,
                "compare_models": 1,
                "summary": 1,
                "all": 1,
                **REPORT_TWO,
            },
        ),
    ],
)
def test_an_example_replaces_the_default_experiment(tmp_path, example, jobs):
    from snakemake_runner import copy_workflow, planned_jobs

    workdir = copy_workflow(tmp_path / "experiment")
    config_file = f"config/examples/{example}.yaml"
    create_named_inputs(workdir, yaml.safe_load((workdir / config_file).read_text()))
    assert planned_jobs(workdir, "--configfile", config_file) == jobs


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_plans_a_score_for_each_model_and_dataset(tmp_path, path):
    """Up to the downloads the examples need the network for: with their files in place, each plans."""
    from snakemake_runner import copy_workflow, planned_jobs

    workdir = copy_workflow(tmp_path / "experiment")
    config = yaml.safe_load(path.read_text())
    create_named_inputs(workdir, config)
    planned = planned_jobs(workdir, "--configfile", f"config/examples/{path.name}")
    scored = sum(planned.get(f"score_{task}", 0) for task in EVALUATED_TASKS)
    evaluated = [name for name, entry in config["datasets"].items() if entry["task"] in EVALUATED_TASKS]
    assert scored == model_count(config) * len(evaluated) and planned["all"] == 1
    # A suite's job is told the benchmark each of its datasets names, whose metric it averages it by.
    for suite, datasets in config.get("suites", {}).items():
        named = {dataset: config["datasets"][dataset].get("published") for dataset in datasets}
        assert suite_benchmarks(workdir, datasets[0]) == {d: b for d, b in named.items() if b}, suite


def suite_benchmarks(workdir, first_dataset):
    """{dataset: benchmark} of the --benchmark words in the arguments file of the planned score_suite job whose
    first entry (MODEL DATASET RANKS) is of `first_dataset`."""
    for path in (workdir / ".snakemake/clipeval-arguments").glob("*.json"):
        words = json.loads(path.read_text())
        if words[0] == "--entry" and words[2] == first_dataset and "ranks" in Path(words[3]).name:
            return {words[i + 1]: words[i + 2] for i, word in enumerate(words) if word == "--benchmark"}
    raise AssertionError(f"no suite arguments file names {first_dataset}")


def test_the_examples_and_the_default_experiment_can_share_one_results_folder():
    """A dataset or model name that two of them define otherwise would stop the second run (README)."""
    import itertools

    configs = {path.stem: yaml.safe_load(path.read_text()) for path in [*EXAMPLES, REPO / "config/config.yaml"]}
    clashes = []
    for (first, a), (second, b) in itertools.combinations(configs.items(), 2):
        clashes += [
            (first, second, section, name)
            for section in ("datasets", "models")
            for name in set(a[section]) & set(b[section])
            if a[section][name] != b[section][name]
        ]
        if set(a["models"]) & set(b["models"]) and set(a["datasets"]) & set(b["datasets"]):
            clashes += [
                (first, second, section)
                for section in ("numerics", "extract", "knn", "metrics")
                if a.get(section) != b.get(section)
            ]
    assert clashes == []


# Two captions the model's tokenizer strains: one with characters outside its vocabulary (the stand-in's
# KNOWN_CHARACTERS), one longer than its 77 tokens.
STRAINED_CAPTIONS = {7005: "一只狗坐在垫子上", 7006: "红色的连衣裙" * 14}


def write_muge_layout(folder, num_images=24):
    """MUGE's validation files as Chinese-CLIP releases them (valid_imgs.tsv of base64 images and
    valid_texts.jsonl), with Chinese captions; the images are shapes."""
    import base64
    import json

    from clipeval.data.sources.shapes import generate_shapes

    images, _, _ = generate_shapes(num_images, 3, 1000)
    folder.mkdir(parents=True)
    (folder / "valid_imgs.tsv").write_text("".join(f"{i}\t{base64.b64encode(raw).decode()}\n" for i, raw in images))
    phrases = ["红色的连衣裙", "白色运动鞋", "男女款黑色", "一只猫坐在垫子上"]
    captions = {7000 + n: f"{phrases[n % len(phrases)]}{n}" for n in range(num_images)}
    captions.update(STRAINED_CAPTIONS)
    (folder / "valid_texts.jsonl").write_text(
        "".join(
            json.dumps({"text_id": text_id, "text": text, "image_ids": [int(images[n][0])]}, ensure_ascii=False) + "\n"
            for n, (text_id, text) in enumerate(captions.items())
        )
    )
    return captions


def test_the_multilingual_example_runs_offline_once_its_downloads_are_in_the_hub_cache(tmp_path):
    """config/examples/muge.yaml, as a user runs it after open_clip's first download: xlm-roberta-base's
    tokenizer (transformers) reads the Chinese captions, the weights of the pretrained tag load from the
    cache, and every stage runs with the hub offline (the suite's own cache and HF_HUB_OFFLINE: conftest.py).
    Stand-ins of the real layouts (tests/hub_standins.py)."""
    import numpy as np
    import torch
    from hub_standins import write_tagged_weights, write_xlm_roberta_base
    from snakemake_runner import copy_workflow, planned_jobs, read_summary, recorded_folders, run_jobs

    from clipeval.features.feature_files import read_features

    config = yaml.safe_load((REPO / "config/examples/muge.yaml").read_text())
    (model,) = config["models"].values()
    hub = Path(os.environ["HF_HUB_CACHE"])
    write_xlm_roberta_base(hub)
    write_tagged_weights(hub, model["arch"], model["pretrained"])
    workdir = copy_workflow(tmp_path / "experiment")
    captions = write_muge_layout(workdir / "data/MUGE")
    arguments = ("--configfile", "config/examples/muge.yaml")

    planned = planned_jobs(workdir, *arguments)
    assert run_jobs(workdir, *arguments) == {**planned, "decode_pixels": 1}
    assert planned_jobs(workdir, *arguments) == {}
    (row,) = read_summary(workdir, "muge")
    assert (row["model"], row["dataset"], row["images"], row["texts"]) == ("xlm-roberta-b-32", "muge", "24", "24")

    # The captions' features are open_clip's own encoding of them with the cached tokenizer and weights.
    reference, _, _ = open_clip.create_model_and_transforms(model["arch"], pretrained=model["pretrained"])
    tokens = open_clip.get_tokenizer(model["arch"])(list(captions.values()))
    assert (tokens == 3).sum() == 1, "one character (狗) is not one the stand-in tokenizer knows"
    with torch.inference_mode():
        expected = torch.nn.functional.normalize(reference.eval().encode_text(tokens), dim=-1).numpy()
    features_folder = recorded_folders(workdir, "muge")["features"]["xlm-roberta-b-32 on muge"]
    ids, features = read_features(workdir / features_folder / "texts.jsonl", "text_id")
    assert ids.tolist() == list(captions)
    np.testing.assert_allclose(features, expected, atol=1e-5)

    # Encoded as the tokenizer gives them, and reported: the cut caption and the one with an unknown token.
    record = json.loads((workdir / features_folder / "texts.tokenization.json").read_text())
    assert (record["captions"], record["context_length"]) == (24, 77)
    assert (record["cut_text_ids"], record["unknown_text_ids"]) == ([7006], [7005])
    summary = (workdir / "results/experiments/muge/summary.md").read_text()
    assert "## Captions the tokenizer cut or could not represent" in summary
    assert f"| xlm-roberta-b-32 | muge | 24 | 77 | 1 | {record['longest']} | 1 |" in summary
