"""Every file the workflow reads, mutated: each command either gives the right result or stops cleanly.

A command given a mutated input must end in one of two ways: exit 0 with
its complete output (for a mutation that changes nothing a reader should
see, such as blank lines in a jsonl, the same bytes as from the valid
file), or exit 1 with one line, `clipeval: error: …`, that names the
mutated file, and no output at all, not even a partial one. Anything else
(a traceback, a crash, a half-written file) fails. Commands run in this
process through the CLI's own entry point, so an exception that would
print a traceback to a user fails the test with that exception.
"""

import contextlib
import io
import json
import re
import shutil
import tempfile
import warnings
from pathlib import Path

import lmdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sources import (
    shapes,
    write_aligned_lines,
    write_aro,
    write_aro_order,
    write_cifar,
    write_cnclip,
    write_coco,
    write_imagefolder,
    write_karpathy,
    write_parquet_shards,
    write_sugarcrepe,
    write_wds_export,
    write_winogavil,
    write_winoground,
    write_xm3600,
)

from clipeval.cli import main

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(6)]

EXAMPLES = 300
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values a field may be given instead of the right one: wrong types, numbers
# past every integer type, non-finite numbers, text where ids belong.
HOSTILE_VALUES = st.sampled_from(
    [
        None,
        True,
        False,
        -1,
        0,
        2**63,
        -(2**63) - 1,
        10**30,
        1.5,
        1e308,
        "1",
        "",
        "\u00e9\u0000",
        [],
        [1, "a"],
        {},
        {"a": [None]},
        [[0.5] * 3],
        "NaN",
    ]
)


def run(argv):
    """(exit status, stdout, stderr) of `clipeval ARGV`, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    # A warning would be printed to the user's terminal beside the one-line error: here it fails the test.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("error")
        status = main([str(arg) for arg in argv])
    return status, out.getvalue(), err.getvalue()


def json_paths(value, prefix=()):
    """Every (path, value) inside a JSON value, the root included."""
    yield prefix, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_paths(item, (*prefix, index))


def mutate_json_value(data, document):
    """The document with one value replaced, a key removed or a key's line duplicated with another value."""
    paths = [path for path, _ in json_paths(document) if path]
    if not paths:
        return json.dumps(data.draw(HOSTILE_VALUES))
    path = data.draw(st.sampled_from(paths))
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    action = data.draw(st.sampled_from(["replace", "remove", "duplicate"]))
    if action == "remove":
        del parent[path[-1]]
    elif action == "duplicate" and isinstance(parent, dict):
        # JSON allows a repeated key: the text holds both, a reader sees one of them.
        key, original, marker = path[-1], parent[path[-1]], "\u0000repeated\u0000"
        parent[key] = marker
        repeated = (
            f"{json.dumps(key)}: {json.dumps(data.draw(HOSTILE_VALUES))}, {json.dumps(key)}: {json.dumps(original)}"
        )
        return json.dumps(document).replace(f"{json.dumps(key)}: {json.dumps(marker)}", repeated, 1)
    else:
        parent[path[-1]] = data.draw(HOSTILE_VALUES)
    return json.dumps(document)


def mutate(data, raw: bytes, kind: str) -> tuple[bytes, bool]:
    """(mutated bytes, whether a reader should see the same content); kind: jsonl, json, text or binary."""
    action = data.draw(
        st.sampled_from(
            {
                "jsonl": ["flip", "truncate", "insert", "encoding", "blank", "duplicate_line", "drop_line", "value"],
                "json": ["flip", "truncate", "insert", "encoding", "value"],
                "text": ["flip", "truncate", "insert", "encoding", "blank", "duplicate_line", "drop_line"],
                "binary": ["flip", "truncate", "insert"],
            }[kind]
        )
    )
    lines = raw.splitlines(keepends=True)
    if action == "flip":
        position = data.draw(st.integers(0, len(raw) - 1))
        return raw[:position] + bytes([raw[position] ^ 1 << data.draw(st.integers(0, 7))]) + raw[position + 1 :], False
    if action == "truncate":
        return raw[: data.draw(st.integers(0, len(raw) - 1))], False
    if action == "insert":
        position = data.draw(st.integers(0, len(raw)))
        return raw[:position] + data.draw(st.binary(min_size=1, max_size=12)) + raw[position:], False
    if action == "encoding":
        # Latin-1 and UTF-16 where UTF-8 is expected, or a lone continuation byte.
        index = data.draw(st.integers(0, len(lines) - 1))
        line = lines[index].decode("utf-8", "replace")
        encoded = data.draw(
            st.sampled_from([line.encode("latin-1", "replace"), line.encode("utf-16"), b"\x80" + lines[index]])
        )
        return b"".join([*lines[:index], encoded, *lines[index + 1 :]]), False
    if action == "blank":
        index = data.draw(st.integers(0, len(lines)))
        blank = data.draw(st.sampled_from([b"\n", b"  \n", b"\r\n"]))
        if index == len(lines) and not raw.endswith(b"\n"):
            blank = b"\n" + blank
        return b"".join([*lines[:index], blank, *lines[index:]]), kind == "jsonl"
    if action in ("duplicate_line", "drop_line"):
        index = data.draw(st.integers(0, len(lines) - 1))
        kept = lines[index : index + 1] * (2 if action == "duplicate_line" else 0)
        return b"".join([*lines[:index], *kept, *lines[index + 1 :]]), False
    if kind == "jsonl":
        index = data.draw(st.integers(0, len(lines) - 1))
        changed = mutate_json_value(data, json.loads(lines[index])).encode() + b"\n"
        return b"".join([*lines[:index], changed, *lines[index + 1 :]]), False
    return mutate_json_value(data, json.loads(raw)).encode(), False


def check_outcome(status, stderr, inputs: list[Path], outputs: list[Path]):
    """Exit 0 with every output, or exit 1 with one line naming an input file and no output.

    The file named may be another input than the mutated one: a caption
    dropped from texts.jsonl leaves a prediction in t2i.jsonl that points
    nowhere, and that prediction's file and id are what the user must see.
    """
    if status == 0:
        assert all(path.exists() for path in outputs), f"exit 0 without {[p for p in outputs if not p.exists()]}"
        return True
    assert status == 1
    assert stderr.count("\n") == 1 and stderr.startswith("clipeval: error: "), stderr
    named = [path for path in inputs if re.search(rf"(?<![\w/.-]){re.escape(str(path))}(?![\w/.-])", stderr)]
    assert named, f"no input file named: {stderr}"
    for path in outputs:
        leftovers = [p.name for p in path.parent.iterdir()] if path.parent.exists() else []
        assert not path.exists() and not [name for name in leftovers if name.startswith(f".{path.name}")], (
            f"partial output beside {path}: {leftovers}"
        )
    return False


def contents(paths):
    """Each output's bytes (a folder's files, by name), for comparing results."""
    found = {}
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file.name != "lock.mdb":
                found[str(file.relative_to(path.parent))] = file.read_bytes()
    return found


class Case:
    """A command over valid inputs in a folder; `fuzz` runs it on a copy with one input mutated."""

    def __init__(self, build, mutable: dict, argv, outputs):
        self.build = build
        self.mutable, self.argv, self.outputs = mutable, argv, outputs

    def prepare(self, source: Path):
        self.source = source
        self.build(source)
        with contextlib.chdir(self.source):
            status, _, stderr = run(self.resolved())
        assert status == 0, stderr
        self.valid = contents([self.source / output for output in self.outputs])

    def resolved(self):
        """The command line, its files relative to the folder it runs in (meta.json records them as given)."""
        return [arg.removeprefix("@") for arg in self.argv]

    def inputs(self, root):
        """Every file the command may read, as the command names them."""
        named = [arg[1:] for arg in self.argv if arg.startswith("@") and arg[1:] not in self.outputs]
        inside = [
            str(path.relative_to(root)) for name in named if (root / name).is_dir() for path in (root / name).rglob("*")
        ]
        return [Path(name) for name in {*named, *inside, *self.mutable}]

    def fuzz(self, data):
        name = data.draw(st.sampled_from(sorted(self.mutable)))
        root = Path(tempfile.mkdtemp(prefix="fuzz-run-"))
        try:
            shutil.copytree(self.source, root, dirs_exist_ok=True)
            for output in self.outputs:
                path = root / output
                shutil.rmtree(path) if path.is_dir() else path.unlink()
            target = root / name
            mutated, same_content = mutate(data, target.read_bytes(), self.mutable[name])
            target.write_bytes(mutated)
            with contextlib.chdir(root):
                status, _, stderr = run(self.resolved())
            outputs = [root / output for output in self.outputs]
            if check_outcome(status, stderr, self.inputs(root), outputs) and same_content:
                assert contents(outputs) == self.valid, "a mutation a reader should not see changed the result"
        finally:
            shutil.rmtree(root)


def features_lines(key, ids, dimension, seed):
    vectors = np.random.default_rng(seed).normal(size=(len(ids), dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return "".join(json.dumps({key: int(i), "feature": [float(x) for x in v]}) + "\n" for i, v in zip(ids, vectors))


def build_retrieval_files(root):
    images, texts = [3 * k + 1 for k in range(12)], list(range(100, 124))
    (root / "texts.jsonl").write_text(
        "".join(
            json.dumps({"text_id": t, "text": f"caption {t}", "image_ids": [images[k // 2]]}) + "\n"
            for k, t in enumerate(texts)
        )
    )
    (root / "images.jsonl").write_text(features_lines("image_id", images, 8, 0))
    (root / "text-features.jsonl").write_text(features_lines("text_id", texts, 8, 1))
    (root / "i2t-truth.jsonl").write_text(
        "".join(
            json.dumps({"image_id": i, "text_ids": [texts[2 * k], texts[2 * k + 1]]}) + "\n"
            for k, i in enumerate(images)
        )
    )
    (root / "i2t.jsonl").write_text(
        "".join(
            json.dumps({"image_id": i, "text_ids": [texts[(2 * k + s) % 24] for s in range(10)]}) + "\n"
            for k, i in enumerate(images)
        )
    )
    (root / "t2i.jsonl").write_text(
        "".join(
            json.dumps({"text_id": t, "image_ids": [images[(k + s) % 12] for s in range(10)]}) + "\n"
            for k, t in enumerate(texts)
        )
    )


def build_cnclip(root):
    write_cnclip(root, num_images=6)


def build_karpathy(root):
    write_karpathy(root, num_images=4)


def build_coco(root):
    write_coco(root, num_images=4)


def build_imagefolder(root):
    write_imagefolder(root, num_images=6)


def build_cifar(root):
    rows = shapes(4, 3)
    pixels = np.zeros((4, 32, 32, 3), np.uint8) + np.arange(4, dtype=np.uint8)[:, None, None, None]
    write_cifar(
        root / "cifar",
        "cifar10",
        pixels,
        [label for *_, label in rows],
        ["circle", "square", "triangle", "star", "cross", "ring"],
    )
    (root / "templates.txt").write_text("a {}\n")


def build_sugarcrepe(root):
    write_sugarcrepe(root, num_images=6)


def build_aro(root):
    write_aro(root, num_examples=4)


def build_aro_order(root):
    write_aro_order(root / "hub", num_images=3, captions_per_image=2, per_shard=4)


def build_wds_retrieval(root):
    write_wds_export(root / "export", num_images=5, per_shard=3)


def build_wds_classification(root):
    write_wds_export(root / "export", kind="classification", num_images=5, per_shard=3)


def build_parquet(root):
    write_parquet_shards(root / "hub", num_images=5, per_shard=3)


def build_aligned_lines(root):
    write_aligned_lines(root, num_images=4)


def build_xm3600(root):
    write_xm3600(root, num_images=4)


def build_winoground(root):
    write_winoground(root, num_examples=3)


def build_winogavil(root):
    write_winogavil(root, num_rows=4, num_images=12)


def build_compositionality(root):
    examples = [
        {"example_id": 0, "group": "wino", "image_ids": [1, 2], "text_ids": [10, 11]},
        {"example_id": 1, "group": "sugar", "image_ids": [3], "text_ids": [12, 13]},
        {"example_id": 2, "group": "sugar", "image_ids": [1], "text_ids": [13, 10]},
    ]
    (root / "examples.jsonl").write_text("".join(json.dumps(example) + "\n" for example in examples))
    (root / "images.jsonl").write_text(features_lines("image_id", [1, 2, 3], 8, 4))
    (root / "texts.jsonl").write_text(features_lines("text_id", [10, 11, 12, 13], 8, 5))


def build_classification(root):
    (root / "images.jsonl").write_text(features_lines("image_id", [1, 2, 3, 4], 8, 2))
    (root / "classes.jsonl").write_text(features_lines("class_id", [0, 1, 2], 8, 3))
    (root / "labels.jsonl").write_text("".join(json.dumps({"image_id": i, "label": i % 3}) + "\n" for i in range(1, 5)))
    (root / "classes.json").write_text(json.dumps({"classnames": ["a", "b", "c"], "templates": ["a {}."]}))


# Each reader: the command that reads it, over valid inputs, and the files mutated.
CASES = {
    "features (make-topk-predictions)": Case(
        build_retrieval_files,
        {"images.jsonl": "jsonl", "text-features.jsonl": "jsonl"},
        [
            "make-topk-predictions",
            "--image-feats",
            "@images.jsonl",
            "--text-feats",
            "@text-features.jsonl",
            "--top-k",
            "3",
            "--direction",
            "t2i",
            "--output",
            "@out.jsonl",
        ],
        ["out.jsonl"],
    ),
    "feature shards (gather-features)": Case(
        build_retrieval_files,
        {"images.jsonl": "jsonl"},
        ["gather-features", "@images.jsonl", "--output", "@out.jsonl"],
        ["out.jsonl"],
    ),
    "texts and predictions (evaluate)": Case(
        build_retrieval_files,
        {"texts.jsonl": "jsonl", "t2i.jsonl": "jsonl"},
        ["evaluate", "@texts.jsonl", "@t2i.jsonl", "@out.json"],
        ["out.json"],
    ),
    "image-to-text truth and predictions (evaluate --direction i2t)": Case(
        build_retrieval_files,
        {"i2t-truth.jsonl": "jsonl", "i2t.jsonl": "jsonl"},
        ["evaluate", "--direction", "i2t", "@i2t-truth.jsonl", "@i2t.jsonl", "@out.json"],
        ["out.json"],
    ),
    "Chinese-CLIP tsv and texts (prepare cnclip)": Case(
        build_cnclip,
        {"cn_imgs.tsv": "text", "cn_texts.jsonl": "jsonl"},
        ["prepare", "cnclip", "--images", "@cn_imgs.tsv", "--texts", "@cn_texts.jsonl", "--out", "@out"],
        ["out"],
    ),
    "Karpathy annotations (prepare karpathy)": Case(
        build_karpathy,
        {"dataset_flickr30k.json": "json", "flickr30k-images/7000.png": "binary"},
        [
            "prepare",
            "karpathy",
            "--annotations",
            "@dataset_flickr30k.json",
            "--images",
            "@flickr30k-images",
            "--out",
            "@out",
        ],
        ["out"],
    ),
    "COCO annotations (prepare coco)": Case(
        build_coco,
        {"captions_val2017.json": "json"},
        ["prepare", "coco", "--annotations", "@captions_val2017.json", "--images", "@val2017", "--out", "@out"],
        ["out"],
    ),
    "image folders, class names, templates (prepare imagefolder)": Case(
        build_imagefolder,
        {"classnames.txt": "text", "templates.txt": "text", "val/circle/0001.png": "binary"},
        [
            "prepare",
            "imagefolder",
            "--images",
            "@val",
            "--classnames",
            "@classnames.txt",
            "--templates",
            "@templates.txt",
            "--out",
            "@out",
        ],
        ["out"],
    ),
    "CIFAR batches (prepare cifar)": Case(
        build_cifar,
        {"cifar/test_batch": "binary", "cifar/batches.meta": "binary", "templates.txt": "text"},
        ["prepare", "cifar", "--batch", "@cifar/test_batch", "--templates", "@templates.txt", "--out", "@out"],
        ["out"],
    ),
    "SugarCrepe splits (prepare sugarcrepe)": Case(
        build_sugarcrepe,
        {
            "sugar-crepe/replace_obj.json": "json",
            "sugar-crepe/swap_att.json": "json",
            "val2017/000000397000.png": "binary",
        },
        ["prepare", "sugarcrepe", "--annotations", "@sugar-crepe", "--images", "@val2017", "--out", "@out"],
        ["out"],
    ),
    "ARO VG-Relation (prepare aro)": Case(
        build_aro,
        {"visual_genome_relation.json": "json", "images/2300001.jpg": "binary"},
        ["prepare", "aro", "--annotations", "@visual_genome_relation.json", "--images", "@images", "--out", "@out"],
        ["out"],
    ),
    "ARO COCO-Order shards (prepare aro_order)": Case(
        build_aro_order,
        {"hub/data/test-00000-of-00002.parquet": "binary", "hub/data/test-00001-of-00002.parquet": "binary"},
        ["prepare", "aro_order", "--shards", "@hub/data", "--out", "@out"],
        ["out"],
    ),
    "webdataset export shards (prepare wds_retrieval)": Case(
        build_wds_retrieval,
        {"export/test/0.tar": "binary", "export/test/1.tar": "binary"},
        ["prepare", "wds_retrieval", "--export", "@export", "--out", "@out"],
        ["out"],
    ),
    "webdataset export, class names, templates (prepare wds_classification)": Case(
        build_wds_classification,
        {
            "export/test/0.tar": "binary",
            "export/classnames.txt": "text",
            "export/zeroshot_classification_templates.txt": "text",
        },
        ["prepare", "wds_classification", "--export", "@export", "--out", "@out"],
        ["out"],
    ),
    "parquet shards (prepare parquet_retrieval)": Case(
        build_parquet,
        {"hub/data/test-00000-of-00002.parquet": "binary", "hub/data/test-00001-of-00002.parquet": "binary"},
        ["prepare", "parquet_retrieval", "--shards", "@hub/data", "--out", "@out"],
        ["out"],
    ),
    "XTD10's aligned names and captions (prepare aligned_lines)": Case(
        build_aligned_lines,
        {"test_image_names.txt": "text", "test_1kcaptions_de.txt": "text"},
        [
            "prepare",
            "aligned_lines",
            "--image-names",
            "@test_image_names.txt",
            "--captions",
            "@test_1kcaptions_de.txt",
            "--images",
            "@images",
            "--out",
            "@out",
        ],
        ["out"],
    ),
    "Crossmodal-3600 captions (prepare xm3600)": Case(
        build_xm3600,
        {"captions.jsonl": "jsonl"},
        [
            "prepare",
            "xm3600",
            "--annotations",
            "@captions.jsonl",
            "--images",
            "@images",
            "--language",
            "en",
            "--captions",
            "all",
            "--out",
            "@out",
        ],
        ["out"],
    ),
    "Winoground examples (prepare winoground)": Case(
        build_winoground,
        {"examples.jsonl": "jsonl", "images/ex_0_img_1.png": "binary"},
        ["prepare", "winoground", "--examples", "@examples.jsonl", "--images", "@images", "--out", "@out"],
        ["out"],
    ),
    "WinoGAViL cues (prepare winogavil)": Case(
        build_winogavil,
        {"winogavil_dataset.csv": "text", "images/item 1.jpg": "binary"},
        ["prepare", "winogavil", "--examples", "@winogavil_dataset.csv", "--images", "@images", "--out", "@out"],
        ["out"],
    ),
    "examples and features (score-compositionality)": Case(
        build_compositionality,
        {"examples.jsonl": "jsonl", "images.jsonl": "jsonl", "texts.jsonl": "jsonl"},
        [
            "score-compositionality",
            "--examples",
            "@examples.jsonl",
            "--image-feats",
            "@images.jsonl",
            "--text-feats",
            "@texts.jsonl",
            "--bootstrap",
            "0",
            "--output",
            "@out.json",
        ],
        ["out.json"],
    ),
    "labels, classes, features (score-classification)": Case(
        build_classification,
        {"images.jsonl": "jsonl", "classes.jsonl": "jsonl", "labels.jsonl": "jsonl", "classes.json": "json"},
        [
            "score-classification",
            "--image-feats",
            "@images.jsonl",
            "--class-feats",
            "@classes.jsonl",
            "--labels",
            "@labels.jsonl",
            "--classes",
            "@classes.json",
            "--bootstrap",
            "0",
            "--output",
            "@out.json",
        ],
        ["out.json"],
    ),
}


@pytest.mark.parametrize("reader", list(CASES))
def test_a_mutated_input_gives_the_right_result_or_one_line_naming_the_file(reader, tmp_path):
    case = CASES[reader]
    case.prepare(tmp_path)

    @FUZZ
    @given(st.data())
    def fuzz(data):
        case.fuzz(data)

    fuzz()


def write_lmdb(path: Path, entries: dict):
    with lmdb.open(str(path), map_size=1 << 24) as environment, environment.begin(write=True) as transaction:
        for key, value in entries.items():
            transaction.put(key, value)


@FUZZ
@given(st.data())
def test_a_mutated_image_lmdb_gives_the_right_result_or_one_line_naming_it(data):
    """Chinese-CLIP's image LMDB, changed entry by entry (its pages are the lmdb library's to check)."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-lmdb-"))
    try:
        _, texts = write_cnclip(root, num_images=4)
        entries = {b"num_images": b"4"}
        for line in (root / "cn_imgs.tsv").read_bytes().splitlines():
            image_id, encoded = line.split(b"\t")
            entries[image_id] = encoded
        key = data.draw(st.sampled_from(sorted(entries)))
        action = data.draw(st.sampled_from(["value", "rename", "remove", "add"]))
        if action == "value":
            entries[key] = mutate(data, entries[key], "binary")[0]
        elif action == "rename":
            entries[
                data.draw(
                    st.sampled_from(
                        [b"-1", b"05", b" 7", b"1e3", b"99999999999999999999999", b"x", b"\xff", b"num_images "]
                    )
                )
            ] = entries.pop(key)
        elif action == "remove":
            del entries[key]
        else:
            entries[data.draw(st.sampled_from([b"600000", b"num_images", b"0"]))] = data.draw(
                st.sampled_from([b"", b"not base64!", b"aGVsbG8=", b"-3", entries[key]])
            )
        write_lmdb(root / "imgs.lmdb", entries)
        with contextlib.chdir(root):
            status, _, stderr = run(
                ["prepare", "cnclip", "--images", "imgs.lmdb", "--texts", texts.name, "--out", "out"]
            )
        check_outcome(status, stderr, [Path("imgs.lmdb"), Path(texts.name)], [root / "out"])
    finally:
        shutil.rmtree(root)


@FUZZ
@given(st.data())
def test_a_mutated_config_gets_one_line_naming_the_key_or_passes_the_schema(data):
    """The config check (config_errors.py) over the default config and an example with every kind of section."""
    import yaml
    from conftest import REPO

    from clipeval.data.sources import format_names
    from clipeval.planning.config_errors import config_error

    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    path = data.draw(
        st.sampled_from(
            ["config/config.yaml", "config/examples/precomputed-features.yaml", "config/examples/imagenet-1k-val.yaml"]
        )
    )
    raw = (REPO / path).read_bytes()
    if data.draw(st.booleans()):
        mutated = mutate(data, raw, "binary")[0]  # the YAML text: flipped, cut, inserted bytes
    else:
        mutated = mutate_json_value(data, yaml.safe_load(raw)).encode()  # JSON is YAML: a value changed
    try:
        config = yaml.safe_load(mutated)
    except yaml.YAMLError:
        return  # Snakemake reports a file that is not YAML, with its line
    if not isinstance(config, dict):
        return  # Snakemake refuses a config that is not a mapping
    message = config_error(config, schema, format_names())
    if message is not None:
        assert "\n" not in message and message.split(":")[0], message
        first = message.split(":")[0].split(".")[0].split("[")[0]
        assert first in {*schema["properties"], "the config"}, message


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_mutated_config_stops_snakemake_with_a_config_error_or_plans(data):
    """The whole check as Snakemake runs it (schema, the checks across sections, the files named), a few times:
    each dry run takes seconds."""
    import yaml
    from conftest import REPO
    from snakemake_runner import config_error_line, copy_workflow, snakemake

    document = yaml.safe_load((REPO / "config/config.yaml").read_text())
    mutated = mutate_json_value(data, document)
    root = Path(tempfile.mkdtemp(prefix="fuzz-config-"))
    try:
        copy_workflow(root)
        (root / "config/mutated.yaml").write_text(mutated)
        result = snakemake(root, "--dry-run", "--configfile", "config/mutated.yaml")
        if result.returncode != 0:
            config_error_line(result)  # its one line, and nothing else
    finally:
        shutil.rmtree(root)


# File names as users' folders hold them: any character but "/" and NUL, dots alone, names of other folders.
FILE_NAMES = st.one_of(
    st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=40),
    st.sampled_from([".", "..", "../x.png", "-h", "--out", "$(touch X)", "a b.png", " ", "~", "*.png"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_image_file_name_gives_the_right_dataset_or_one_line_naming_it(data):
    """An image's file name in a Karpathy split (and the file under it) may be anything a file system takes:
    prepare reads that file, or refuses it in one line naming the annotations and the name, and writes
    nothing."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-names-"))
    try:
        annotations, images = write_karpathy(root, num_images=3)
        name = data.draw(FILE_NAMES)
        document = json.loads(annotations.read_text())
        original = images / document["images"][1]["filename"]
        try:
            target = images / name
            if not target.exists() and target.parent == images:
                original.rename(target)
        except OSError:
            return  # a name the file system refuses (too long): no user has such a file
        document["images"][1]["filename"] = name
        annotations.write_text(json.dumps(document))
        status, _, err = run(
            ["prepare", "karpathy", "--annotations", annotations, "--images", images, "--out", root / "out"]
        )
        if status == 0:
            meta = json.loads((root / "out/meta.json").read_text())
            assert meta["counts"]["images"] == 3
        else:
            assert status == 1 and err.count("\n") == 1 and err.startswith("clipeval: error: "), err
            assert str(annotations) in err or str(images) in err, err
            assert not (root / "out").exists()
        assert not (root / "X").exists()
    finally:
        shutil.rmtree(root)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limit=st.integers(min_value=0, max_value=400_000))
def test_a_disk_that_fills_at_any_point_of_prepare_gives_the_dataset_or_one_line_and_nothing(limit):
    """Fault injection: each write past `limit` bytes of a file fails as a full disk's would (RLIMIT_FSIZE)."""
    from test_write_faults import run_with_file_size_limit

    root = Path(tempfile.mkdtemp(prefix="fuzz-full-"))
    try:
        out = root / "shapes"
        result = run_with_file_size_limit(limit, "prepare", "shapes", "--num-images", 60, "--seed", 3, "--out", out)
        if result.returncode == 0:
            complete = root / "complete"
            assert run(["prepare", "shapes", "--num-images", 60, "--seed", 3, "--out", complete])[0] == 0
            assert (out / "meta.json").read_bytes() == (complete / "meta.json").read_bytes()
        else:
            assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
            assert result.stderr.startswith(f"clipeval: error: {out}"), result.stderr
            assert list(root.iterdir()) == []
    finally:
        shutil.rmtree(root)
