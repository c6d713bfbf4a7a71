"""The same bits on the other vendor's CPU, emulated by QEMU (emulated_cpu.py): a file of its own, the suite's
longest single test, so that it starts first on a worker of its own."""

import pytest
from emulated_cpu import emulator_prefix, other_vendor_cpu
from test_reproducibility import cli, train_and_extract

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(10)]


def test_a_cpu_of_the_other_vendor_trains_and_extracts_the_same_bits(tmp_path):
    """Two AdamW steps and the features of four images and their captions, natively and emulated. Under
    emulation a command's cost is importing torch, initialising the model and compiling oneDNN's kernels, not
    the size of its input, so the smallest input that takes every code path is enough."""
    qemu, model = other_vendor_cpu()
    cli("prepare", "shapes", "--num-images", 8, "--seed", 3, "--out", tmp_path / "train")
    cli("prepare", "shapes", "--num-images", 4, "--seed", 4, "--out", tmp_path / "test")
    # QEMU's user mode loses forked loader workers
    options = {"batch_size": 4, "extract_options": ("--num-workers", 0)}
    here = train_and_extract(tmp_path, tmp_path / "native", **options)
    there = train_and_extract(tmp_path, tmp_path / "emulated", prefix=emulator_prefix(qemu, model), **options)
    for name in here:
        assert there[name] == here[name], f"{name} differs on an emulated {model}"
