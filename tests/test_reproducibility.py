"""The same bits whatever the machine does: shards, batches, workers, threads, load and CPU type.

Each factor is varied explicitly through the commands the workflow runs, so
none of these tests depends on how busy or how new the machine is. Other
CPUs are imitated by capping the instruction sets the libraries may use
(what an older CPU would offer them); test_other_vendor.py emulates the
other vendor's CPU.
"""

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from conftest import run_cli

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(6)]

# What other x86-64 CPUs would offer the libraries. MKL's dispatch by CPU is
# imitated with MKL_ENABLE_INSTRUCTIONS; ATen's and oneDNN's by their caps.
CPU_IMITATIONS = {
    "an AVX2 CPU": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "MKL as on an SSE4 CPU": {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}


def cli(*args, env=None):
    result = subprocess.run(
        [sys.executable, "-m", "clipeval", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


# Several commands in one interpreter, as `python -m clipeval` runs each: importing torch is most of a
# command's cost here (and under emulation nearly all of it), so commands that share an environment share
# the import. Each command still builds its model, reads its inputs and pins its numerics itself.
RUN_COMMANDS = (
    "import json, sys; from clipeval.cli import main; sys.exit(max(main(c) for c in json.loads(sys.argv[1])))"
)


def run_commands(*commands, env=None, prefix=()):
    """Run clipeval `commands` (argument lists) one after another in one interpreter, under `prefix`."""
    argument = json.dumps([[str(arg) for arg in command] for command in commands])
    result = subprocess.run(
        [*prefix, sys.executable, "-c", RUN_COMMANDS, argument],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]


@contextmanager
def busy_cores(count=2):
    """Other processes competing for every core while the block runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


# One command that touches a file once torch and open_clip are imported, with the environment the portable
# profile pins set first, as its pin() would before importing torch.
SIGNAL_AFTER_IMPORTS = (
    "import json, os, pathlib, sys; from clipeval.numerics import PORTABLE_ENVIRONMENT;"
    " os.environ.update(PORTABLE_ENVIRONMENT); import open_clip; from clipeval.cli import main;"
    " pathlib.Path(sys.argv[1]).touch(); sys.exit(main(json.loads(sys.argv[2])))"
)


def run_under_load(command, scratch):
    """Run one clipeval command with every core busy while it computes: the competitors start once its
    imports are done, so that they load its work, not its start-up."""
    imported = scratch / "imported"
    process = subprocess.Popen(
        [sys.executable, "-c", SIGNAL_AFTER_IMPORTS, imported, json.dumps([str(arg) for arg in command])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not imported.exists() and process.poll() is None:
        time.sleep(0.05)
    with busy_cores():
        _, stderr = process.communicate()
    assert process.returncode == 0, stderr[-3000:]


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("repro")
    # 150 images make three forward blocks, the last one short.
    cli("prepare", "shapes", "--num-images", 150, "--seed", 3, "--first-image-id", 7, "--out", root / "test")
    cli("prepare", "shapes", "--num-images", 96, "--seed", 4, "--out", root / "train")
    return root


def train_command(data, out, *extra, batch_size=32):
    return ["train", "--arch", "clipeval-tiny", "--dataset", data / "train", "--epochs", 1, "--batch-size",
            batch_size, "--lr", 0.001, "--seed", 0, "--output", out, *extra]  # fmt: skip


def images_command(data, checkpoint, out, *extra):
    return ["extract-features", "--arch", "clipeval-tiny", "--pretrained", checkpoint,
            "--images", data / "test/images.lmdb", "--image-output", out, "--device", "cpu", *extra]  # fmt: skip


def texts_command(data, checkpoint, out, *extra):
    return ["extract-features", "--arch", "clipeval-tiny", "--pretrained", checkpoint,
            "--texts", data / "test/texts.jsonl", "--text-output", out, "--device", "cpu", *extra]  # fmt: skip


def train(data, out, *extra, env=None):
    cli(*train_command(data, out, *extra), env=env)
    return out.read_bytes()


def extract_images(data, checkpoint, out, *extra, env=None):
    cli(*images_command(data, checkpoint, out, *extra), env=env)
    return out.read_bytes()


def extract_texts(data, checkpoint, out, *extra, env=None):
    cli(*texts_command(data, checkpoint, out, *extra), env=env)
    return out.read_bytes()


def train_and_extract(data, out, env=None, prefix=(), batch_size=32, extract_options=()):
    """Train, then extract the test split's image and caption features, in one interpreter; the files' bytes."""
    out.mkdir(exist_ok=True)
    files = {name: out / name for name in ("checkpoint.pt", "images.jsonl", "texts.jsonl")}
    run_commands(
        train_command(data, files["checkpoint.pt"], batch_size=batch_size),
        images_command(data, files["checkpoint.pt"], files["images.jsonl"], *extract_options),
        texts_command(data, files["checkpoint.pt"], files["texts.jsonl"], *extract_options),
        env=env,
        prefix=prefix,
    )
    return {name: path.read_bytes() for name, path in files.items()}


def sharded_images(data, checkpoint, directory, shard_size, *extra):
    """Extract in shards of `shard_size`, then gather, as the workflow does."""
    shards = [directory / f"{index}.jsonl" for index in range(-(-150 // shard_size))]
    run_commands(
        *(
            images_command(data, checkpoint, shard, "--shard-size", shard_size, "--shard-index", index, *extra)
            for index, shard in enumerate(shards)
        ),
        ["gather-features", *shards, "--output", directory / "images.jsonl"],
    )
    return (directory / "images.jsonl").read_bytes()


@pytest.fixture(scope="module")
def reference(small_data):
    made = train_and_extract(small_data, small_data / "reference")
    return {
        "checkpoint": small_data / "reference/checkpoint.pt",
        "images": made["images.jsonl"],
        "texts": made["texts.jsonl"],
    }


@pytest.mark.parametrize(
    "shard_size, options",
    [
        (50, ["--batch-size", "7", "--num-workers", "0"]),
        (100, ["--batch-size", "300", "--num-workers", "3", "--threads", "4"]),
    ],
)
def test_image_features_do_not_depend_on_shards_batches_or_workers(
    small_data, reference, tmp_path, shard_size, options
):
    assert sharded_images(small_data, reference["checkpoint"], tmp_path, shard_size, *options) == reference["images"]


def test_features_do_not_depend_on_threads_or_load(small_data, reference, tmp_path):
    # The libraries told one thread by the environment; a job given fewer than portable's two is refused
    # (test_granted_threads.py).
    one_thread = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert (
        extract_images(small_data, reference["checkpoint"], tmp_path / "a.jsonl", env=one_thread) == reference["images"]
    )
    assert (
        extract_texts(
            small_data,
            reference["checkpoint"],
            tmp_path / "b.jsonl",
            "--threads",
            "3",
            "--batch-size",
            "5",
            env={"OMP_NUM_THREADS": "3"},
        )
        == reference["texts"]
    )
    run_under_load(images_command(small_data, reference["checkpoint"], tmp_path / "c.jsonl"), tmp_path)
    assert (tmp_path / "c.jsonl").read_bytes() == reference["images"]


def test_training_does_not_depend_on_threads_or_load(small_data, reference, tmp_path):
    expected = reference["checkpoint"].read_bytes()
    assert train(small_data, tmp_path / "one.pt", env={"OMP_NUM_THREADS": "1"}) == expected
    assert train(small_data, tmp_path / "four.pt", "--threads", "4", env={"OMP_NUM_THREADS": "4"}) == expected
    run_under_load(train_command(small_data, tmp_path / "loaded.pt"), tmp_path)
    assert (tmp_path / "loaded.pt").read_bytes() == expected


@pytest.mark.parametrize("machine", list(CPU_IMITATIONS))
def test_other_cpus_train_and_extract_the_same_bits(small_data, reference, tmp_path, machine):
    made = train_and_extract(small_data, tmp_path, env=CPU_IMITATIONS[machine])
    assert made["checkpoint.pt"] == reference["checkpoint"].read_bytes()
    assert made["images.jsonl"] == reference["images"]
    assert made["texts.jsonl"] == reference["texts"]


def test_the_recorded_code_path_is_the_pinned_one(small_data, reference, tmp_path):
    cli(
        "describe-model",
        "--arch",
        "clipeval-tiny",
        "--pretrained",
        reference["checkpoint"],
        "--output",
        tmp_path / "meta.json",
        env=CPU_IMITATIONS["an AVX2 CPU"],
    )
    import json

    numerics = json.loads((tmp_path / "meta.json").read_text())["numerics"]
    assert numerics == {
        "profile": "portable",
        "cpu_capability": "AVX2",
        "threads": 2,
        "MKL_CBWR": "COMPATIBLE",
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_DYNAMIC": "FALSE",
        "OMP_DYNAMIC": "FALSE",
    }


@pytest.mark.parametrize(
    "variable, value", [("ATEN_CPU_CAPABILITY", "default"), ("MKL_CBWR", "AUTO"), ("ONEDNN_MAX_CPU_ISA", "SSE41")]
)
def test_an_environment_that_would_change_the_code_path_is_refused(small_data, tmp_path, variable, value):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "clipeval",
            "describe-model",
            "--arch",
            "clipeval-tiny",
            "--output",
            tmp_path / "meta.json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, variable: value},
    )
    assert result.returncode == 1 and not (tmp_path / "meta.json").exists()
    assert result.stderr.strip().splitlines() == [
        f"clipeval: error: the environment sets {variable}={value}, but the portable numerics profile needs"
        f" {variable}={dict(ATEN_CPU_CAPABILITY='avx2', MKL_CBWR='COMPATIBLE', ONEDNN_MAX_CPU_ISA='AVX2')[variable]}:"
        " unset it, or set numerics: native"
    ]


def test_a_wrong_numerics_profile_is_refused(small_data, tmp_path):
    result = run_cli(
        "train",
        "--arch",
        "clipeval-tiny",
        "--dataset",
        small_data / "train",
        "--epochs",
        1,
        "--batch-size",
        32,
        "--lr",
        0.001,
        "--seed",
        0,
        "--output",
        tmp_path / "x.pt",
        "--numerics",
        "fast",
    )
    assert result.returncode == 2 and "invalid choice: 'fast'" in result.stderr
