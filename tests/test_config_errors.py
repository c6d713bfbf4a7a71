"""Config errors as one line naming the entry, the key and what is allowed (clipeval/planning/config_errors.py)."""

import copy

import jsonschema
import pytest
import yaml
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from clipeval.data.sources import format_names
from clipeval.planning.config_errors import config_error, location, oversized_error
from clipeval.storage.config_files import MAX_VALUES, duplicate_key_error

SCHEMA = yaml.safe_load((REPO / "config/schema.yaml").read_text())
VALID = {
    "datasets": {
        "train": {"format": "shapes", "task": "train", "num_images": 10, "seed": 0},
        "flickr": {
            "format": "karpathy",
            "task": "retrieval",
            "annotations": "a.json",
            "images": "img",
            "split": ["test"],
        },
    },
    "models": {
        "tiny": {
            "arch": "clipeval-tiny",
            "train": {"dataset": "train", "epochs": 1, "batch_size": 8, "lr": 0.1, "seed": 0},
        },
        "b32": {"arch": "ViT-B-32", "pretrained": "openai", "preprocess": {"mean": [0, 0, 0]}},
        "given": {"features": {"flickr": {"images": "i.jsonl", "texts": "t.jsonl"}}},
    },
    "extract": {"batch_size": 8},
    "metrics": {"recall_at": [1, 5, 10]},
}


def error_after(change):
    config = copy.deepcopy(VALID)
    change(config)
    return config_error(config, SCHEMA, format_names())


def test_the_valid_config_has_no_error():
    assert config_error(copy.deepcopy(VALID), SCHEMA, format_names()) is None


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c.update(extrakt={}),
            "the config: unknown key 'extrakt' (allowed: compare, datasets, evaluate, experiment, extract, knn, metrics, models, numerics, probe, ready_checkpoints, replace, report, suites)",
        ),
        (lambda c: c.update(compare={"baselin": "tiny"}), "compare: unknown key 'baselin' (allowed: baseline)"),
        (lambda c: c.pop("models"), "the config: 'models' is a required property"),
        (
            lambda c: c["datasets"]["flickr"].update(anotations="a.json"),
            "datasets.flickr: unknown key 'anotations' (allowed: annotations, format, image_id, images, protocol, published, split, task)",
        ),
        (
            lambda c: c["datasets"]["flickr"].update(split=["tset"]),
            "datasets.flickr.split[0]: 'tset' is not one of ['train', 'restval', 'val', 'test']",
        ),
        (lambda c: c["datasets"]["flickr"].pop("images"), "datasets.flickr: 'images' is a required property"),
        (
            lambda c: c["datasets"]["flickr"].update(format="flickr30k"),
            "datasets.flickr.format: unknown format 'flickr30k' (allowed: aligned_lines, aro, aro_order, cifar, cnclip, coco, imagefolder,"
            " karpathy, parquet_classification, parquet_retrieval, shapes, sugarcrepe, wds_classification,"
            " wds_retrieval, winogavil, winoground, xm3600)",
        ),
        (lambda c: c["datasets"]["flickr"].pop("format"), "datasets.flickr: 'format' is a required property"),
        (
            lambda c: c["datasets"].update({"my data": c["datasets"].pop("flickr")}),
            "datasets: 'my data' does not match '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'",
        ),
        (
            lambda c: c["models"]["b32"].update(pretrianed="openai"),
            "models.b32: unknown key 'pretrianed' (allowed: arch, checkpoints, features, precision, preprocess, pretrained, train)",
        ),
        (
            lambda c: c["models"]["b32"].pop("pretrained"),
            "models.b32: a model gives arch with pretrained, arch with train, arch with checkpoints (a series), or features alone; it gives arch, preprocess",
        ),
        (
            lambda c: c["models"]["tiny"]["train"].update(epochs=0),
            "models.tiny.train.epochs: 0 is less than the minimum of 1",
        ),
        (
            lambda c: c["models"]["b32"]["preprocess"].update(interpolation="nearest"),
            "models.b32.preprocess.interpolation: 'nearest' is not one of ['bicubic', 'bilinear', 'random']",
        ),
        (
            lambda c: c["models"]["given"]["features"]["flickr"].update(text="t.jsonl"),
            "models.given.features.flickr: unknown key 'text' (allowed: classes, images, texts)",
        ),
        (
            lambda c: c.update(evaluate=[{"model": "tiny", "datset": "flickr"}]),
            "evaluate[0]: unknown key 'datset' (allowed: dataset, model)",
        ),
        (
            lambda c: c["extract"].update(device="gpu"),
            "extract.device: 'gpu' does not match '^(auto|cpu|cuda(:[0-9]+)?)$'",
        ),
        (lambda c: c.update(knn={"top_k": "10"}), "knn.top_k: '10' is not of type 'integer'"),
        (lambda c: c["metrics"].update(recall_at=[0]), "metrics.recall_at[0]: 0 is less than the minimum of 1"),
        (lambda c: c.update(numerics="fast"), "numerics: 'fast' is not one of ['portable', 'native']"),
        (
            lambda c: c.update(report={"failure": 8}),
            "report: unknown key 'failure' (allowed: failures, shown, thumbnail_size)",
        ),
        (lambda c: c.update(report={"failures": 0}), "report.failures: 0 is less than the minimum of 1"),
        (
            lambda c: c.update(metrics={"bootstrap": 10**9}),
            "metrics.bootstrap: 1000000000 is greater than the maximum of 100000",
        ),
        (
            lambda c: c["datasets"]["train"].update(num_images=10**8),
            "datasets.train.num_images: 100000000 is greater than the maximum of 1000000",
        ),
        (
            lambda c: c.update(extract={"num_workers": 1000}),
            "extract.num_workers: 1000 is greater than the maximum of 64",
        ),
        # Integers past 64 bits, which jobs could not hold, stop the plan rather than a job.
        (
            lambda c: c["datasets"]["train"].update(seed=2**64),
            "datasets.train.seed: 18446744073709551616 is greater than the maximum of 9223372036854775807",
        ),
        (
            lambda c: c["datasets"]["train"].update(first_image_id=2**63),
            "datasets.train.first_image_id: 9223372036854775808 is greater than the maximum of 4611686018427387904",
        ),
        (
            lambda c: c["models"]["tiny"]["train"].update(seed=2**64),
            "models.tiny.train.seed: 18446744073709551616 is greater than the maximum of 9223372036854775807",
        ),
        (
            lambda c: c.update(metrics={"bootstrap_seed": 2**70}),
            "metrics.bootstrap_seed: 1180591620717411303424 is greater than the maximum of 9223372036854775807",
        ),
        (
            lambda c: c["datasets"]["flickr"].update(images="-img"),
            "datasets.flickr.images: '-img' starts with '-', which a job's command would read as an option (for a"
            " file or folder, write ./ before it)",
        ),
        (
            lambda c: c["models"]["given"]["features"]["flickr"].update(texts="--t.jsonl"),
            "models.given.features.flickr.texts: '--t.jsonl' starts with '-', which a job's command would read as an"
            " option (for a file or folder, write ./ before it)",
        ),
    ],
)
def test_each_section_names_the_entry_and_key(change, message):
    assert error_after(change) == message


def test_location_reads_like_the_config():
    assert location(["models", "tiny", "train", "epochs"]) == "models.tiny.train.epochs"
    assert location(["metrics", "recall_at", 0]) == "metrics.recall_at[0]"
    assert location([]) == "the config"


# Nine levels of ten aliases each: 10**9 strings once expanded, under 600 bytes on disk.
ALIAS_BOMB = "\n".join(
    ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"{chr(98 + level)}: &{chr(98 + level)} [{', '.join([f'*{chr(97 + level)}'] * 10)}]" for level in range(8)]
    + ["datasets: {}", "models: {}", "knn: {top_k: *i}"]
)


def test_a_repeated_key_is_refused_with_its_file_and_line(tmp_path):
    path = tmp_path / "repeated.yaml"
    path.write_text("datasets: {}\nmodels:\n  tiny: {arch: a}\n  b32: {arch: b}\n  tiny: {arch: c}\n")
    assert duplicate_key_error(path) == f"{path}: line 5: key 'tiny' is given twice"
    path.write_text("a: &x {k: 1, j: 2}\nb: *x\nc: [*x, {k: 1}]\n")
    assert duplicate_key_error(path) is None


def test_an_alias_bomb_is_refused_before_the_schema_reads_it():
    assert len(ALIAS_BOMB) < 600
    bomb = yaml.safe_load(ALIAS_BOMB)  # the aliases share their objects: loading it is cheap
    assert oversized_error(bomb) == (
        f"the config holds more than {MAX_VALUES:,} values once its YAML aliases are expanded;"
        " aliases that expand this far are refused"
    )
    assert oversized_error(VALID) is None


def test_a_long_offending_value_is_cut_in_the_message():
    message = error_after(lambda c: c.update(knn={"top_k": "9" * 1000}))
    assert message == f"knn.top_k: '{'9' * 299} …"


def test_a_config_file_that_asks_for_yte_is_named_without_evaluating_it(tmp_path):
    from clipeval.storage.config_files import yte_error

    asks = tmp_path / "asks.yaml"
    asks.write_text('__use_yte__: true\nexperiment: ?open("evaluated", "w")\n')
    assert yte_error(asks) == (
        f"{asks}: __use_yte__ asks Snakemake to run the config's ?-expressions as Python; clipeval reads plain"
        " YAML configs only"
    )
    mentions = tmp_path / "mentions.yaml"
    mentions.write_text("# no __use_yte__: true here\nexperiment: plain\nnote: __use_yte__\n")
    assert yte_error(mentions) is None
    assert not (tmp_path / "evaluated").exists()


def expanded_values(value) -> int:
    """The values a loaded config stands for, its aliases expanded (as oversized_error counts them)."""
    if isinstance(value, dict):
        return 1 + sum(1 + expanded_values(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(expanded_values(item) for item in value)
    return 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=5), max_size=4), min_size=1, max_size=6))
def test_the_alias_count_read_from_the_node_graph_is_the_expanded_one(tmp_path_factory, references):
    """alias_error sizes each YAML node once, never expanding; its count must be the expansion's: anchors that
    name earlier anchors as many times as drawn, checked against loading and walking the whole thing."""
    from clipeval.storage import config_files

    lines = ["a0: &a0 [x, y]"]
    for index, named in enumerate(references, start=1):
        items = ", ".join(["z", *(f"*a{min(earlier, index - 1)}" for earlier in named)])
        lines.append(f"a{index}: &a{index} {{k: [{items}]}}")
    path = tmp_path_factory.mktemp("aliases") / "config.yaml"
    path.write_text("\n".join(lines) + "\n")
    total = expanded_values(yaml.safe_load(path.read_text()))
    for limit in (total - 1, total):
        config_files.MAX_VALUES, saved = limit, config_files.MAX_VALUES
        try:
            refused = config_files.alias_error(path) is not None
        finally:
            config_files.MAX_VALUES = saved
        assert refused == (total > limit)


@pytest.mark.parametrize(
    "config_path",
    [REPO / "config/config.yaml", *sorted((REPO / "config/examples").glob("*.yaml"))],
    ids=lambda p: p.stem,
)
def test_the_defaults_filled_from_the_read_schema_are_snakemakes(config_path):
    """fill_defaults stands in for Snakemake's validate(config, "config/schema.yaml"): the same config after it,
    for the default config and every example, read with the parser the workflow reads the schema with."""
    from snakemake.utils import validate

    from clipeval.planning.config_errors import fill_defaults

    text = (REPO / "config/schema.yaml").read_text()
    schema = yaml.load(text, Loader=yaml.CSafeLoader)
    assert schema == yaml.safe_load(text)
    ours, snakemakes = (yaml.safe_load(config_path.read_text()) for _ in range(2))
    fill_defaults(ours, schema)
    validate(snakemakes, str(REPO / "config/schema.yaml"))
    assert ours == snakemakes
    with pytest.raises(jsonschema.ValidationError):
        fill_defaults({**ours, "knn": {"top_k": "ten"}}, schema)
