"""The ready configs in config/examples/ are valid and name real open_clip models."""

import open_clip
import pytest
import yaml

from clipeval.config_errors import config_error
from clipeval.data.sources import format_names

from conftest import REPO

EXAMPLES = sorted((REPO / "config/examples").glob("*.yaml"))


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {"flickr30k-1k", "coco-5k", "coco-1k", "muge", "flickr30k-cn", "coco-cn",
                                          "cifar10", "cifar100", "imagenet-1k-val"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_validates_and_names_known_weights(path):
    config = yaml.safe_load(path.read_text())
    assert config_error(config, yaml.safe_load((REPO / "config/schema.yaml").read_text()), format_names()) is None
    known = set(open_clip.list_pretrained())
    for name, model in config["models"].items():
        assert (model["arch"], model["pretrained"]) in known, name
    assert path.read_text().startswith("# "), "each example says where its files come from"


def test_an_example_replaces_the_default_experiment(tmp_path):
    from snakemake_runner import copy_workflow, planned_jobs

    workdir = copy_workflow(tmp_path / "experiment")
    (workdir / "data/Flickr30k-CN").mkdir(parents=True)
    for name in ("test_imgs.tsv", "test_texts.jsonl"):
        (workdir / "data/Flickr30k-CN" / name).touch()
    jobs = planned_jobs(workdir, "--configfile", "config/examples/flickr30k-cn.yaml")
    assert jobs == {"prepare_cnclip": 1, "describe_model": 1, "extract_text_features": 1, "extract_image_shard": 1,
                    "gather_image_features": 1, "knn": 2, "score_retrieval": 1, "summary": 1, "all": 1}
