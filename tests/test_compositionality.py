"""Compositionality: the importers of SugarCrepe's and Winoground's layouts, and the text, image and group
scores against hand-computed choices, ties under the ranking rule included."""

import json

import numpy as np
import pytest
from conftest import run_cli
from sources import shapes, word_orders, write_aro, write_aro_order, write_sugarcrepe, write_winoground

from clipeval.comparison import compare_models
from clipeval.compositionality.metrics import score_compositionality
from clipeval.data.choices import Example, load_examples
from clipeval.data.dataset import open_dataset
from clipeval.data.image_lmdb import IMAGE_FORMATS
from clipeval.errors import ClipevalError


def score(examples, images: dict, texts: dict, **options):
    image_ids, text_ids = list(images), list(texts)
    return score_compositionality(
        examples,
        np.array(image_ids),
        np.array([images[i] for i in image_ids], dtype=np.float32),
        np.array(text_ids),
        np.array([texts[t] for t in text_ids], dtype=np.float32),
        "images.jsonl",
        "texts.jsonl",
        **options,
    )


def test_hand_computed_choices_with_ties_going_to_the_lower_id():
    images = {1: [1, 0], 2: [0, 1], 3: [1, 1], 4: [1, 0]}
    texts = {10: [1, 0], 11: [0, 1], 12: [2, 0], 13: [1, 0], 20: [1, 0], 21: [1, 0], 30: [1, 0], 5: [1, 0]}
    examples = [
        Example(0, "wino", (1, 2), (10, 11)),  # each image its own caption, each caption its own image: all right
        Example(1, "wino", (1, 3), (12, 11)),  # both images choose 12; caption 11 chooses image 3: text wrong
        Example(2, "sugar", (4,), (20, 21)),  # a tie: caption 20 (the lower id) is chosen, right
        Example(3, "sugar", (4,), (30, 5)),  # a tie with the negative's id lower: the negative is chosen, wrong
    ]
    metrics, record = score(examples, images, texts)
    assert record["outcomes"] == [[1, 1, 1], [0, 1, 0], [1, -1, -1], [0, -1, -1]]
    assert record["choices"][1] == {"texts": [12, 12], "images": [1, 3]}
    assert record["choices"][3] == {"texts": [5], "images": []}
    assert metrics["text_score"] == 50.0 and metrics["image_score"] == 100.0 and metrics["group_score"] == 50.0
    assert metrics["groups"] == {
        "wino": {"text_score": 50.0, "image_score": 100.0, "group_score": 50.0},
        "sugar": {"text_score": 50.0},
    }
    assert metrics["counts"] == {"images": 4, "texts": 7, "examples": 4, "groups": {"wino": 2, "sugar": 2}}


def random_examples(rng, count, noise):
    images = {i: rng.normal(size=4).tolist() for i in range(count)}
    texts = {}
    for i in range(count):
        texts[2 * i] = (np.array(images[i]) + rng.normal(scale=noise, size=4)).tolist()
        texts[2 * i + 1] = rng.normal(size=4).tolist()
    examples = [Example(i, ("a", "b")[i % 2], (i,), (2 * i, 2 * i + 1)) for i in range(count)]
    return examples, images, texts


def test_scores_match_a_direct_count_and_intervals_hold_them():
    rng = np.random.default_rng(3)
    examples, images, texts = random_examples(rng, 400, 1.0)
    metrics, _ = score(examples, images, texts, bootstrap=300, seed=1)
    right = [
        float(np.dot(np.float32(images[i]).astype(float), np.float32(texts[2 * i]).astype(float)))
        > float(np.dot(np.float32(images[i]).astype(float), np.float32(texts[2 * i + 1]).astype(float)))
        for i in range(400)
    ]
    assert metrics["text_score"] == pytest.approx(100 * np.mean(right))
    assert metrics["groups"]["b"]["text_score"] == pytest.approx(100 * np.mean(right[1::2]))
    low, high = metrics["intervals"]["text_score"]
    assert low < metrics["text_score"] < high and high - low < 15
    assert metrics["bootstrap"]["replicates"] == 300


def test_a_paired_comparison_of_two_models_on_the_same_examples():
    rng = np.random.default_rng(4)
    examples, images, texts = random_examples(rng, 300, 0.5)
    noisier = {t: (np.array(v) + rng.normal(scale=1.5, size=4)).tolist() for t, v in texts.items()}
    first, first_record = score(examples, images, texts, bootstrap=200)
    second, second_record = score(examples, images, noisier, bootstrap=200)
    comparison = compare_models(("a", "b"), first_record, second_record, "b.json", 200, 0)
    difference = comparison["difference"]["text_score"]
    assert difference == pytest.approx(first["text_score"] - second["text_score"]) and difference > 0
    low, high = comparison["intervals"]["text_score"]
    assert low <= difference <= high
    assert comparison["difference"]["groups"]["a"]["text_score"] == pytest.approx(
        first["groups"]["a"]["text_score"] - second["groups"]["a"]["text_score"]
    )
    other = score(examples[:-1], images, texts)[1]
    with pytest.raises(ClipevalError, match=r"^b\.json: its examples differ from the first model's"):
        compare_models(("a", "b"), first_record, other, "b.json")


def test_a_feature_missing_for_an_example_is_named():
    with pytest.raises(ClipevalError, match=r"^texts\.jsonl: no feature for text_id 7 \(example 0\)$"):
        score([Example(0, "g", (1,), (6, 7))], {1: [1.0]}, {6: [1.0]})


def prepare_sugarcrepe(annotations, images, out, *options):
    return run_cli("prepare", "sugarcrepe", "--annotations", annotations, "--images", images, *options, "--out", out)


def test_sugarcrepe_splits_become_groups_and_shared_images_are_stored_once(tmp_path):
    annotations, images = write_sugarcrepe(tmp_path / "source")
    result = run_cli("prepare", "sugarcrepe", "--annotations", annotations, "--images", images, "--out", tmp_path / "d")
    assert result.returncode == 0, result.stderr
    store, captions = open_dataset(tmp_path / "d")
    examples = load_examples(tmp_path / "d/examples.jsonl")
    splits = {name: json.loads((annotations / f"{name}.json").read_text()) for name in ("replace_obj", "swap_att")}
    entries = [(name, entry) for name, split in splits.items() for entry in split.values()]
    files = sorted({entry["filename"] for _, entry in entries})
    assert len(store.image_ids()) == len(files) == 10 and len(examples) == len(entries) == 12
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    for example, (split, entry) in zip(examples, entries):
        assert example.group == split and example.image_ids == (files.index(entry["filename"]),)
        assert [text_of[t] for t in example.text_ids] == [entry["caption"], entry["negative_caption"]]
    result = prepare_sugarcrepe(annotations, images, tmp_path / "one", "--splits", "swap_att")
    assert result.returncode == 0 and {e.group for e in load_examples(tmp_path / "one/examples.jsonl")} == {"swap_att"}


def test_winoground_examples_pair_images_and_captions_and_group_by_tag(tmp_path):
    examples_file, images = write_winoground(tmp_path / "source")
    result = run_cli("prepare", "winoground", "--examples", examples_file, "--images", images, "--out", tmp_path / "d")
    assert result.returncode == 0, result.stderr
    _, captions = open_dataset(tmp_path / "d")
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    lines = [json.loads(line) for line in examples_file.read_text().splitlines()]
    for example, line in zip(load_examples(tmp_path / "d/examples.jsonl"), lines):
        assert example.image_ids == example.text_ids == (2 * line["id"], 2 * line["id"] + 1)
        assert [text_of[t] for t in example.text_ids] == [line["caption_0"], line["caption_1"]]
        assert example.group == line["collapsed_tag"]


def test_winoground_grouped_by_its_secondary_tag_puts_the_untagged_examples_in_a_group_of_their_own(tmp_path):
    """Most of the real examples.jsonl's lines have an empty secondary_tag: the documented group_by refused them."""
    examples_file, images = write_winoground(tmp_path / "source")
    lines = [json.loads(line) for line in examples_file.read_text().splitlines()]
    lines[1]["secondary_tag"] = "Symbolic"
    examples_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_cli(
        "prepare", "winoground", "--examples", examples_file, "--images", images, "--group-by", "secondary_tag",
        "--out", tmp_path / "d",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    groups = [example.group for example in load_examples(tmp_path / "d/examples.jsonl")]
    assert groups == ["no secondary tag", "Symbolic", *["no secondary tag"] * (len(lines) - 2)]


@pytest.mark.parametrize(
    "spoil, message",
    [
        (
            lambda root: (root / "sugar-crepe/swap_att.json").write_text(
                '{"0": {"filename": "x.png", "caption": "a"}}'
            ),
            "{root}/sugar-crepe/swap_att.json: entry '0': negative_caption must be a non-empty string",
        ),
        (
            lambda root: (root / "sugar-crepe/swap_att.json").write_text(
                '{"0": {"filename": "gone.png", "caption": "a", "negative_caption": "b"}}'
            ),
            "{root}/sugar-crepe/swap_att.json: entry '0': image file {root}/val2017/gone.png not found",
        ),
        (
            lambda root: (root / "sugar-crepe/swap_att.json").write_text(
                '{"0": {"filename": "../x.png", "caption": "a", "negative_caption": "b"}}'
            ),
            "{root}/sugar-crepe/swap_att.json: entry '0': image file '../x.png' is outside the image folder"
            " {root}/val2017",
        ),
        (
            lambda root: [path.unlink() for path in (root / "sugar-crepe").iterdir()],
            "{root}/sugar-crepe: no split files (*.json)",
        ),
    ],
)
def test_a_bad_sugarcrepe_file_is_one_line_naming_it_and_writes_nothing(tmp_path, spoil, message):
    root = tmp_path / "source"
    annotations, images = write_sugarcrepe(root)
    spoil(root)
    out = tmp_path / "d"
    result = run_cli("prepare", "sugarcrepe", "--annotations", annotations, "--images", images, "--out", out)
    assert result.returncode == 1 and not out.exists()
    assert result.stderr == f"clipeval: error: {message.format(root=root)}\n"


def test_an_unknown_sugarcrepe_split_names_the_ones_found(tmp_path):
    annotations, images = write_sugarcrepe(tmp_path / "source")
    result = prepare_sugarcrepe(annotations, images, tmp_path / "d", "--splits", "add_rel")
    assert result.stderr == f"clipeval: error: {annotations}: no split 'add_rel' (found: replace_obj, swap_att)\n"


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda line: line.pop("caption_1"), "{path}:1: example 0: caption_1 must be a non-empty string"),
        (lambda line: line.update(image_0="missing"), "{path}:1: example 0: image file {images}/missing.png not found"),
        (lambda line: line.update(id=-2), "{path}:1: id must be a non-negative integer, got -2"),
        (lambda line: line.update(id=1), "{path}:2: example id 1 appears twice (first on line 1)"),
        (lambda line: line.pop("collapsed_tag"), "{path}:1: example 0: collapsed_tag must be a non-empty string"),
    ],
)
def test_a_bad_winoground_line_is_one_line_naming_it_and_writes_nothing(tmp_path, change, message):
    examples_file, images = write_winoground(tmp_path / "source")
    lines = [json.loads(line) for line in examples_file.read_text().splitlines()]
    change(lines[0])
    examples_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "d"
    result = run_cli("prepare", "winoground", "--examples", examples_file, "--images", images, "--out", out)
    assert result.returncode == 1 and not out.exists()
    assert result.stderr == f"clipeval: error: {message.format(path=examples_file, images=images)}\n"


def test_the_gallery_shows_failures_with_each_group_taking_its_turn():
    from clipeval.reporting.choice_failures import failed_examples

    record = {
        "group_of": [0, 0, 0, 1, 1, 2],
        "outcomes": [[0, -1, -1], [0, -1, -1], [1, -1, -1], [0, 1, 0], [1, 0, 0], [1, 1, 1]],
    }
    # Wrong: 0, 1 (group 0), 3 (its text), 4 (its image) (group 1); group 2 has none.
    assert failed_examples(record, 3) == [0, 1, 3]
    assert failed_examples(record, 2) == [0, 3]
    assert failed_examples(record, 10) == [0, 1, 3, 4]


def test_aro_crops_each_image_to_its_box_and_gives_the_false_caption_the_lower_id(tmp_path):
    from PIL import Image

    annotations, images = write_aro(tmp_path / "source")
    entries = json.loads(annotations.read_text())
    # Fractional boxes, as the real files hold: ARO's loader gives PIL's crop the file's numbers, which PIL rounds
    # edge by edge (to even on a half: 4.5 to 4, 70.5 to 70, 8.5 + 63.5 = 72.0).
    entries[0].update(bbox_x=8.5, bbox_y=4.5, bbox_w=63.5, bbox_h=66.0)
    entries[1].update(bbox_x=7.6, bbox_y=3.4, bbox_w=60.3, bbox_h=61.7)
    annotations.write_text(json.dumps(entries))
    result = run_cli("prepare", "aro", "--annotations", annotations, "--images", images, "--out", tmp_path / "d")
    assert result.returncode == 0, result.stderr
    store, captions = open_dataset(tmp_path / "d")
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    examples = load_examples(tmp_path / "d/examples.jsonl")
    for index, (entry, example) in enumerate(zip(entries, examples)):
        box = (entry["bbox_x"], entry["bbox_y"], entry["bbox_x"] + entry["bbox_w"], entry["bbox_y"] + entry["bbox_h"])
        expected = np.asarray(Image.open(images / entry["image_path"]).convert("RGB").crop(box))
        assert np.array_equal(np.asarray(store.image(index).convert("RGB")), expected)
        true_id, false_id = example.text_ids
        assert (text_of[true_id], text_of[false_id]) == (entry["true_caption"], entry["false_caption"])
        assert false_id < true_id and example.group == entry["relation_name"]
        assert example.macro == (entry["relation_name"] != "next to")  # a symmetric relation in ARO's list


def test_aro_macro_accuracy_averages_the_groups_it_keeps(tmp_path):
    annotations, images = write_aro(tmp_path / "source", kind="attribution", num_examples=56)
    entries = json.loads(annotations.read_text())
    entries[0]["attributes"] = ["green", "small"]  # a pair of one example: fewer than 25, out of the macro average
    annotations.write_text(json.dumps(entries))
    assert (
        run_cli("prepare", "aro", "--annotations", annotations, "--images", images, "--out", tmp_path / "d").returncode
        == 0
    )
    examples = load_examples(tmp_path / "d/examples.jsonl")
    assert {e.group: e.macro for e in examples} == {"green_small": False, "blue_small": True, "red_small": True}
    rng = np.random.default_rng(5)
    image_features = {i: rng.normal(size=4).tolist() for i in range(56)}
    text_features = {t: rng.normal(size=4).tolist() for t in range(112)}
    metrics, _ = score(examples, image_features, text_features)
    groups = metrics["groups"]
    assert metrics["macro_text_score"] == pytest.approx(
        (groups["blue_small"]["text_score"] + groups["red_small"]["text_score"]) / 2
    )
    without_macro = score([Example(0, "g", (0,), (1, 0))], image_features, text_features)[0]
    assert "macro_text_score" not in without_macro  # SugarCrepe's and Winoground's examples carry no macro flag


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda entries: entries[1].pop("bbox_w"), "{path}: entry 1: bbox_x, bbox_y, bbox_w, bbox_h must be numbers"),
        (
            lambda entries: entries[2].update(bbox_w=500),
            "{path}: entry 2: the box (8, 4, 500, 64) is outside the image (90×80)",
        ),
        (lambda entries: entries[0].pop("true_caption"), "{path}: entry 0: true_caption must be a non-empty string"),
        (
            lambda entries: entries[3].update(attributes=["a", "b"]) or entries[3].pop("relation_name"),
            "{path}: mixes relation entries and attribute entries; give VG-Relation and VG-Attribution as two datasets",
        ),
        (
            lambda entries: entries[4].update(image_path="gone.jpg"),
            "{path}: entry 4: image file {images}/gone.jpg not found",
        ),
    ],
)
def test_a_bad_aro_entry_is_one_line_naming_it_and_writes_nothing(tmp_path, spoil, message):
    annotations, images = write_aro(tmp_path / "source")
    entries = json.loads(annotations.read_text())
    spoil(entries)
    annotations.write_text(json.dumps(entries))
    out = tmp_path / "d"
    result = run_cli("prepare", "aro", "--annotations", annotations, "--images", images, "--out", out)
    assert result.returncode == 1 and not out.exists()
    assert result.stderr == f"clipeval: error: {message.format(path=annotations, images=images)}\n"


def prepare_aro_order(shards, out):
    return run_cli("prepare", "aro_order", "--shards", shards, "--out", out)


def test_aro_order_stores_each_image_once_and_gives_the_true_caption_the_lowest_id(tmp_path):
    shards = write_aro_order(tmp_path / "source", num_images=4, captions_per_image=2, per_shard=3)
    result = prepare_aro_order(shards, tmp_path / "d")
    assert result.returncode == 0, result.stderr
    store, captions = open_dataset(tmp_path / "d")
    drawn = shapes(4, 19)
    assert store.image_ids().tolist() == [0, 1, 2, 3]  # eight rows, two per image
    for image_id, (_, raw, _, _) in enumerate(drawn):
        assert store.encoded_bytes(image_id) == raw
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    examples = load_examples(tmp_path / "d/examples.jsonl")
    assert [(e.example_id, e.group, e.image_ids, e.macro) for e in examples] == [
        (k, "order", (k // 2,), None) for k in range(8)
    ]
    for k, example in enumerate(examples):
        caption = drawn[k // 2][2][k % 2]
        assert example.text_ids == tuple(range(5 * k, 5 * k + 5))
        assert [text_of[t] for t in example.text_ids] == [caption, *word_orders(caption)]


def test_aro_order_accuracy_is_the_share_of_rows_whose_true_caption_wins_ties_included(tmp_path):
    examples = [Example(k, "order", (k // 2,), tuple(range(5 * k, 5 * k + 5))) for k in range(4)]
    images = {0: [1, 0], 1: [0, 1]}
    texts = {t: [0, 0] for t in range(20)}
    texts[0] = [1, 0]  # row 0: the true caption alone on top: right
    texts[7] = [1, 0]  # row 1: a perturbation on top: wrong
    texts[10], texts[13] = [0, 1], [0, 1]  # row 2: the true caption ties a perturbation, and wins on its lower id
    texts[19] = [0, 1]  # row 3: the last perturbation on top: wrong
    metrics, record = score(examples, images, texts)
    assert record["outcomes"] == [[1, -1, -1], [0, -1, -1], [1, -1, -1], [0, -1, -1]]
    assert metrics["text_score"] == 50.0 and metrics["groups"] == {"order": {"text_score": 50.0}}


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda table: table.drop_columns(["hard_text_3"]), "{shard}: no column 'hard_text_3' (columns: {columns})"),
        (
            lambda table: table.set_column(2, "hard_text_1", pa_strings(["", "b", "c"])),
            "{shard}: row 0: hard_text_1 must be a non-empty string",
        ),
        (
            lambda table: table.set_column(0, "images", pa_images([b"png?", b"x", b"y"])),
            "{shard}: row 0: image does not decode (not {formats})",
        ),
    ],
)
def test_a_bad_aro_order_row_is_one_line_naming_it_and_writes_nothing(tmp_path, spoil, message):
    import pyarrow.parquet as pq

    shards = write_aro_order(tmp_path / "source", num_images=3, captions_per_image=1, per_shard=3)
    shard = shards / "test-00000-of-00001.parquet"
    table = spoil(pq.read_table(shard))
    pq.write_table(table, shard)
    out = tmp_path / "d"
    result = prepare_aro_order(shards, out)
    assert result.returncode == 1 and not out.exists()
    columns = ", ".join(table.column_names)
    assert (
        result.stderr
        == f"clipeval: error: {message.format(shard=shard, columns=columns, formats=', '.join(IMAGE_FORMATS))}\n"
    )


def pa_strings(values):
    import pyarrow as pa

    return pa.array(values, type=pa.string())


def pa_images(raws):
    import pyarrow as pa

    return pa.array(
        [{"bytes": raw, "path": None} for raw in raws], pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    )
