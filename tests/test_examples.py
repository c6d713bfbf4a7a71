"""The ready configs in config/examples/ are valid and name real open_clip models."""

import open_clip
import pytest
import yaml
from conftest import REPO

from clipeval.config_errors import config_error
from clipeval.data.sources import FILE, FOLDER, format_names, source_format
from clipeval.models.pretrained import is_checkpoint_path

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
        "precomputed-features",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_validates_and_names_known_weights(path):
    config = yaml.safe_load(path.read_text())
    assert config_error(config, yaml.safe_load((REPO / "config/schema.yaml").read_text()), format_names()) is None
    known = set(open_clip.list_pretrained())
    for name, model in config["models"].items():
        if "pretrained" in model and not is_checkpoint_path(model["pretrained"]):
            assert (model["arch"], model["pretrained"]) in known, name
    assert path.read_text().startswith("# "), "each example says where its files come from"
    assert f"# Run: make run CONFIG=config/examples/{path.name}\n" in path.read_text()


def test_the_examples_cover_every_format_a_local_checkpoint_and_precomputed_features():
    configs = [yaml.safe_load(path.read_text()) for path in EXAMPLES]
    assert {d["format"] for c in configs for d in c["datasets"].values()} == set(format_names()) - {"shapes"}
    models = [m for c in configs for m in c["models"].values()]
    assert any(is_checkpoint_path(m.get("pretrained", "")) for m in models)
    assert any("features" in m for m in models)


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
        paths = [model["pretrained"]] if is_checkpoint_path(model.get("pretrained", "")) else []
        paths += [p for files in model.get("features", {}).values() for p in files.values()]
        for path in paths:
            (workdir / path).parent.mkdir(parents=True, exist_ok=True)
            (workdir / path).touch()


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
