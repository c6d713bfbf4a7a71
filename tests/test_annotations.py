"""Karpathy-split and COCO-captions importers, on small files in the real formats."""

import io
import json

import pytest
from conftest import run_cli
from PIL import Image
from snakemake_runner import copy_workflow, edit_config, planned_jobs

from clipeval.data.dataset import open_dataset


def jpeg(colour):
    buffer = io.BytesIO()
    Image.new("RGB", (10, 8), colour).save(buffer, format="JPEG")
    return buffer.getvalue()


def karpathy_flickr(tmp_path):
    """A dataset_flickr30k.json in Karpathy's layout, with its image directory."""
    images = tmp_path / "flickr30k-images"
    images.mkdir()
    entries = []
    sentid = 0
    for imgid, (split, colour) in enumerate([("train", "red"), ("test", "blue"), ("test", "green"), ("val", "white")]):
        filename = f"{1000 + imgid}.jpg"
        (images / filename).write_bytes(jpeg(colour))
        sentences = []
        for k in range(5):
            sentences.append(
                {"tokens": ["a", colour], "raw": f"a {colour} picture, take {k}", "imgid": imgid, "sentid": sentid}
            )
            sentid += 1
        entries.append(
            {
                "sentids": [s["sentid"] for s in sentences],
                "imgid": imgid,
                "sentences": sentences,
                "split": split,
                "filename": filename,
            }
        )
    annotations = tmp_path / "dataset_flickr30k.json"
    annotations.write_text(json.dumps({"images": entries, "dataset": "flickr30k"}))
    return annotations, images


def coco_captions(tmp_path):
    """A captions_val2017.json with its image directory."""
    images = tmp_path / "val2017"
    images.mkdir()
    image_entries, notes = [], []
    for number, image_id in enumerate([139, 285, 632]):
        name = f"{image_id:012d}.jpg"
        (images / name).write_bytes(jpeg(["red", "blue", "green"][number]))
        image_entries.append({"id": image_id, "file_name": name, "height": 8, "width": 10})
        for k in range(5):
            notes.append({"image_id": image_id, "id": 10 * image_id + k, "caption": f"photo {image_id} number {k} "})
    annotations = tmp_path / "captions_val2017.json"
    annotations.write_text(json.dumps({"info": {}, "images": image_entries, "annotations": notes}))
    return annotations, images


def test_karpathy_test_split(tmp_path):
    annotations, images = karpathy_flickr(tmp_path)
    result = run_cli("prepare", "karpathy", "--annotations", annotations, "--images", images, "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "wrote 2 images, 10 captions" in result.stdout
    store, captions = open_dataset(tmp_path / "out")
    assert store.image_ids().tolist() == [1, 2]
    assert store.encoded_bytes(2) == (images / "1002.jpg").read_bytes()
    assert captions.text_ids.tolist() == list(range(5, 15))
    assert captions.texts[0] == "a blue picture, take 0"


def test_karpathy_split_selection_and_coco_layout(tmp_path):
    annotations, images = karpathy_flickr(tmp_path)
    data = json.loads(annotations.read_text())
    (images / "val2014").mkdir()
    for entry in data["images"]:
        entry["filepath"] = "val2014"
        entry["cocoid"] = 500000 + entry["imgid"]
        (images / entry["filename"]).rename(images / "val2014" / entry["filename"])
    annotations.write_text(json.dumps(data))
    result = run_cli(
        "prepare",
        "karpathy",
        "--annotations",
        annotations,
        "--images",
        images,
        "--split",
        "train",
        "val",
        "--out",
        tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr
    store, captions = open_dataset(tmp_path / "out")
    assert store.image_ids().tolist() == [500000, 500003]
    assert len(captions) == 10


def test_coco_captions_with_an_id_selection(tmp_path):
    annotations, images = coco_captions(tmp_path)
    result = run_cli("prepare", "coco", "--annotations", annotations, "--images", images, "--out", tmp_path / "all")
    assert result.returncode == 0, result.stderr
    store, captions = open_dataset(tmp_path / "all")
    assert store.image_ids().tolist() == [139, 285, 632] and len(captions) == 15
    assert captions.texts[0] == "photo 139 number 0"
    (tmp_path / "ids.txt").write_text("632\n\n139\n")
    result = run_cli(
        "prepare",
        "coco",
        "--annotations",
        annotations,
        "--images",
        images,
        "--image-ids",
        tmp_path / "ids.txt",
        "--out",
        tmp_path / "some",
    )
    assert result.returncode == 0, result.stderr
    store, captions = open_dataset(tmp_path / "some")
    assert store.image_ids().tolist() == [139, 632] and len(captions) == 10
    meta = json.loads((tmp_path / "some/meta.json").read_text())
    assert meta["source"]["format"] == "coco" and meta["counts"]["texts"] == 10


def break_karpathy(tmp_path, change):
    annotations, images = karpathy_flickr(tmp_path)
    data = json.loads(annotations.read_text())
    change(data, images)
    annotations.write_text(json.dumps(data))
    return annotations, images


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d, i: (i / "1001.jpg").unlink(),
            r"dataset_flickr30k\.json: image_id 1: image file .*1001\.jpg not found",
        ),
        (
            lambda d, i: (i / "1002.jpg").write_bytes(b"GIF89a truncated"),
            r"1002\.jpg: image_id 2: image does not decode",
        ),
        (
            lambda d, i: (i / "1002.jpg").write_bytes((i / "1002.jpg").read_bytes()[:60]),
            r"1002\.jpg: image_id 2: image does not decode",
        ),
        (lambda d, i: d["images"][2].update(imgid=1), r"images\[2\]: duplicate image id 1"),
        (
            lambda d, i: d["images"][2]["sentences"][0].update(sentid=5),
            r"images\[2\] image id 2: duplicate caption id 5",
        ),
        (
            lambda d, i: d["images"][1]["sentences"][0].update(raw="  "),
            r"images\[1\] image id 1: caption id 5 has an empty caption",
        ),
        (
            lambda d, i: d["images"][1].update(imgid="one"),
            r"images\[1\]: image id \(cocoid/imgid\) must be a non-negative integer, got 'one'",
        ),
        (
            lambda d, i: d["images"][1].pop("imgid"),
            r"images\[1\]: image id \(cocoid/imgid\) must be a non-negative integer, got None",
        ),
        (lambda d, i: [e.update(split="train") for e in d["images"]], r"no images in split\(s\) test"),
        (
            lambda d, i: d["images"][1].update(sentences={"raw": "x"}),
            r"images\[1\]: image id 1: sentences must be a list of objects",
        ),
        (
            lambda d, i: d["images"][2].update(sentences=["a caption"]),
            r"images\[2\]: image id 2: sentences must be a list of objects",
        ),
        (
            lambda d, i: d["images"][1].update(filepath=None),
            r"images\[1\]: image id 1 has a filepath that is not a string: None$",
        ),
        (
            lambda d, i: d["images"][1].update(imgid=2**63),
            r"images\[1\]: image id \(cocoid/imgid\) 9223372036854775808 is too large"
            r" \(ids are below 2\^63\)$",
        ),
        (  # a file outside the image folder would be read but not tracked by content
            lambda d, i: d["images"][1].update(filename="../../outside.png"),
            r"images\[1\]: image id 1: image file '../../outside.png' is outside the image folder .*/flickr30k-images$",
        ),
        (
            lambda d, i: d["images"][1].update(filepath="", filename="/etc/hostname"),
            r"images\[1\]: image id 1: image file '/etc/hostname' is outside the image folder .*/flickr30k-images$",
        ),
        (  # blamed on the dataset's own results/…/texts.jsonl by the job that read it, before
            lambda d, i: d["images"][1]["sentences"][0].update(raw="x" * (17 << 20)),
            r"^clipeval: error: \S*dataset_flickr30k\.json: caption id \d+ has 17,825,792 characters, more than the"
            r" 1,048,576 a caption may have$",
        ),
    ],
)
def test_bad_karpathy_input_is_named_and_leaves_nothing(tmp_path, change, message):
    import re

    annotations, images = break_karpathy(tmp_path, change)
    result = run_cli("prepare", "karpathy", "--annotations", annotations, "--images", images, "--out", tmp_path / "out")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(message, lines[0]), lines
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d["annotations"].append({"image_id": 7, "id": 1, "caption": "lost"}),
            r"annotations\[15\]: caption id 1 points to unknown image id 7",
        ),
        (lambda d: d["images"].append(dict(d["images"][0])), r"images\[3\]: duplicate image id 139"),
        (lambda d: d["annotations"][4].update(id=1390), r"annotations\[4\]: duplicate caption id 1390"),
        (
            lambda d: d["images"][0].update(file_name="sub/../../x.jpg"),
            r"images\[0\]: image id 139: image file 'sub/../../x.jpg' is outside the image folder .*/val2017\n$",
        ),
    ],
)
def test_bad_coco_input_is_named_and_leaves_nothing(tmp_path, change, message):
    import re

    annotations, images = coco_captions(tmp_path)
    data = json.loads(annotations.read_text())
    change(data)
    annotations.write_text(json.dumps(data))
    result = run_cli("prepare", "coco", "--annotations", annotations, "--images", images, "--out", tmp_path / "out")
    assert result.returncode == 1 and re.search(message, result.stderr), result.stderr
    assert not (tmp_path / "out").exists()


def test_malformed_annotation_json(tmp_path):
    annotations, images = coco_captions(tmp_path)
    annotations.write_text('{"images": [')
    result = run_cli("prepare", "coco", "--annotations", annotations, "--images", images, "--out", tmp_path / "out")
    assert result.returncode == 1 and "captions_val2017.json: malformed JSON" in result.stderr


@pytest.mark.slow
def test_workflow_plans_the_new_formats(tmp_path):
    workdir = copy_workflow(tmp_path / "experiment")
    karpathy_flickr(workdir)
    coco_captions(workdir)
    (workdir / "ids.txt").write_text("139\n")
    edit_config(
        workdir,
        lambda c: c["datasets"].update(
            {
                "flickr30k": {
                    "format": "karpathy",
                    "task": "retrieval",
                    "annotations": "dataset_flickr30k.json",
                    "images": "flickr30k-images",
                    "split": ["test"],
                },
                "coco": {
                    "format": "coco",
                    "task": "retrieval",
                    "annotations": "captions_val2017.json",
                    "images": "val2017",
                    "image_ids": "ids.txt",
                },
            }
        ),
    )
    jobs = planned_jobs(workdir)
    assert jobs["prepare_karpathy"] == 1 and jobs["prepare_coco"] == 1 and jobs["score_retrieval"] == 3


def test_karpathy_image_id_field_chooses_between_cocoid_and_imgid(tmp_path):
    """COCO's split file has both; imgid counts up in file order, which COCO-1K folds follow."""
    from clipeval.data.sources.karpathy import karpathy_split

    annotations, images = karpathy_flickr(tmp_path)
    data = json.loads(annotations.read_text())
    for entry, cocoid in zip(data["images"], [900, 700, 500, 300]):  # COCO ids fall as the file goes on
        entry["cocoid"] = cocoid
    annotations.write_text(json.dumps(data))
    by_default, _ = karpathy_split(annotations, images, ["test", "val"])
    by_imgid, captions = karpathy_split(annotations, images, ["test", "val"], "imgid")
    assert [image_id for image_id, _ in by_default] == [700, 500, 300]
    assert [image_id for image_id, _ in by_imgid] == [1, 2, 3]
    assert captions.image_ids[0].tolist() == [1]
    result = run_cli(
        "prepare",
        "karpathy",
        "--annotations",
        annotations,
        "--images",
        images,
        "--split",
        "test",
        "--image-id",
        "imgid",
        "--out",
        tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr
    store, _ = open_dataset(tmp_path / "out")
    assert store.image_ids().tolist() == [1, 2]


def test_an_image_path_that_is_not_a_regular_file_or_too_large_is_refused_before_reading(tmp_path):
    import os

    from clipeval.data.image_files import MAX_IMAGE_BYTES, read_image_files
    from clipeval.errors import ClipevalError

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo.png")  # reading it would wait forever
    (tmp_path / "zero.png").symlink_to("/dev/zero")  # reading it would never end
    (tmp_path / "loop.png").symlink_to(tmp_path / "loop.png")
    with open(tmp_path / "huge.png", "wb") as handle:
        handle.truncate(MAX_IMAGE_BYTES + 1)  # sparse: no disk used

    def refusal(name):
        with pytest.raises(ClipevalError) as error:
            list(read_image_files([(7, tmp_path / name)], "ann.json"))
        return str(error.value)

    for name in ("folder", "fifo.png", "zero.png"):
        assert refusal(name) == f"ann.json: image_id 7: image file {tmp_path / name} is not a regular file"
    assert refusal("loop.png") == f"ann.json: image_id 7: image file {tmp_path / 'loop.png'} not found"
    assert refusal("huge.png") == (
        f"{tmp_path / 'huge.png'}: image_id 7: {MAX_IMAGE_BYTES + 1:,} bytes, more than an image file may have"
        f" ({MAX_IMAGE_BYTES:,})"
    )
