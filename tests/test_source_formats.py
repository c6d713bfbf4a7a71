"""The source-format registry: each format's settings, its schema entry, and adding a format."""

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from PIL import Image
from snakemake_runner import JOB_CORES, copy_workflow, edit_config, planned_jobs, shared_path, snakemake

from clipeval.data.sources import CAPTIONS, CHOICES, CLASSES, format_names, source_format
from clipeval.planning import plan

# Keys of every dataset entry that say how it is scored, not how it is read.
# The keys of an entry that say how it is scored, not what is in it (planning/plan.py), and its format.
ENTRY_KEYS = {"format", *plan.SCORING_KEYS}


def dataset_schemas(root=REPO):
    return yaml.safe_load((root / "config/schema.yaml").read_text())["$defs"]


def test_the_formats_are_the_modules_of_data_sources():
    assert format_names() == [
        "aligned_lines",
        "aro",
        "aro_order",
        "cifar",
        "cnclip",
        "coco",
        "imagefolder",
        "karpathy",
        "parquet_classification",
        "parquet_retrieval",
        "shapes",
        "sugarcrepe",
        "wds_classification",
        "wds_retrieval",
        "winogavil",
        "winoground",
        "xm3600",
    ]
    assert {name: source_format(name).writes for name in format_names()} == {
        "aligned_lines": CAPTIONS,
        "aro": CHOICES,
        "aro_order": CHOICES,
        "cifar": CLASSES,
        "cnclip": CAPTIONS,
        "coco": CAPTIONS,
        "imagefolder": CLASSES,
        "karpathy": CAPTIONS,
        "shapes": CAPTIONS + CLASSES,
        "sugarcrepe": CHOICES,
        "winogavil": CHOICES,
        "winoground": CHOICES,
        "parquet_classification": CLASSES,
        "parquet_retrieval": CAPTIONS,
        "wds_classification": CLASSES,
        "wds_retrieval": CAPTIONS,
        "xm3600": CAPTIONS,
    }


@pytest.mark.parametrize("name", format_names())
def test_each_format_has_a_schema_entry_with_exactly_its_settings(name):
    """The workflow passes each key of an entry as the setting of that name: the two lists must agree."""
    schema = dataset_schemas()[f"{name}_dataset"]
    settings = source_format(name).settings
    assert set(schema["properties"]) - ENTRY_KEYS == {setting.key for setting in settings}
    assert set(schema["required"]) - ENTRY_KEYS == {setting.key for setting in settings if setting.required}


def test_prepare_lists_the_formats_and_each_format_its_settings():
    listing = run_cli("prepare", "--help")
    assert listing.returncode == 0
    assert "{aligned_lines,aro,aro_order,cifar,cnclip,coco,imagefolder,karpathy," in listing.stdout
    settings = run_cli("prepare", "coco", "--help")
    assert settings.returncode == 0
    assert settings.stdout.startswith(
        "usage: clipeval prepare coco [-h] --annotations ANNOTATIONS --images IMAGES\n"
        "                             [--image-ids IMAGE_IDS] --out DIR\n"
    )


def test_an_unknown_format_is_refused_with_the_list():
    result = run_cli("prepare", "flickr", "--out", "x")
    assert result.returncode == 2
    message = result.stderr.strip().splitlines()[-1]
    # How argparse quotes the choices differs between Python versions.
    assert message.startswith("clipeval prepare: error: argument format: invalid choice: 'flickr' (choose from ")
    assert [name.strip("'") for name in message.rpartition("from ")[2].rstrip(")").split(", ")] == format_names()


# A format a user might add: numbered image files in a folder, with their
# captions in Chinese-CLIP's texts.jsonl.
NUMBERED_FILES = textwrap.dedent('''\
    """Images named by their id (12.png) in one folder, and a texts.jsonl of captions."""

    from pathlib import Path

    from clipeval.data.captions import load_captions
    from clipeval.data.image_files import read_image_files
    from clipeval.data.sources import CAPTIONS, FILE, FOLDER, PreparedSource, Setting, SourceFormat


    def read(settings):
        files = [(int(path.stem), path) for path in sorted(settings["images"].glob("*.png"))]
        source = {"format": "numbered", "images": str(settings["images"]), "texts": str(settings["texts"])}
        return PreparedSource(read_image_files(files, settings["images"]), load_captions(settings["texts"]), source)


    FORMAT = SourceFormat(
        name="numbered",
        help="numbered image files and their captions",
        writes=CAPTIONS,
        settings=(
            Setting("images", "the folder of ID.png files", kind=FOLDER, type=Path, required=True),
            Setting("texts", "captions in Chinese-CLIP's texts.jsonl", kind=FILE, type=Path, required=True),
        ),
        read=read,
    )
''')


def write_image(path, colour):
    Image.new("RGB", (8, 8), colour).save(path)


@pytest.mark.slow
def test_a_new_format_is_one_module_and_one_schema_entry(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    (workdir / "workflow/clipeval/data/sources/numbered.py").write_text(NUMBERED_FILES)
    schema_path = workdir / "config/schema.yaml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["$defs"]["numbered_dataset"] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["format", "task", "images", "texts"],
        "properties": {
            "format": {"const": "numbered"},
            "task": {"enum": ["retrieval"]},
            "images": {"type": "string"},
            "texts": {"type": "string"},
        },
    }
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))
    images = workdir / "mine/images"
    images.mkdir(parents=True)
    for image_id, colour in ((3, "red"), (10, "blue")):
        write_image(images / f"{image_id}.png", colour)
    (workdir / "mine/texts.jsonl").write_text(
        '{"text_id": 1, "text": "a red square", "image_ids": [3]}\n'
        '{"text_id": 2, "text": "a blue square", "image_ids": [10]}\n'
    )
    edit_config(
        workdir,
        lambda config: config["datasets"].update(
            mine={"format": "numbered", "task": "retrieval", "images": "mine/images", "texts": "mine/texts.jsonl"}
        ),
    )

    prepared = shared_path(workdir, "dataset_meta", dataset="mine")
    result = snakemake(workdir, "--cores", JOB_CORES, prepared)
    assert result.returncode == 0, result.stderr[-3000:]
    meta = json.loads((workdir / prepared).read_text())
    assert meta["counts"] == {"images": 2, "texts": 2, "images_without_caption": 0}
    assert meta["source"] == {"format": "numbered", "images": "mine/images", "texts": "mine/texts.jsonl"}
    folder = Path(prepared).parent
    assert (workdir / f"logs/prepare/{folder.name}.log").read_text() == f"wrote 2 images, 2 captions to {folder}\n"
    # Its folder is tracked like the built-in formats' folders: a changed image prepares it again.
    assert planned_jobs(workdir, prepared) == {}
    write_image(images / "10.png", "green")
    assert planned_jobs(workdir, prepared) == {"prepare_numbered": 1}
