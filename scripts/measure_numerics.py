"""Measure what each numerical code path costs and whether it keeps the bits, on this machine.

    .venv/bin/python scripts/measure_numerics.py

For each pinning it encodes a block of images with the freshly initialised
tiny model and then trains it for a few steps, in fresh processes, under 1 and 2 threads and under
instruction-set caps that imitate other CPUs, and prints one table: the time
of a training step relative to the unpinned (native) path measured in the
same run, and whether the trained weights and the features came out the
same in every variant. A second table compares, under the portable pin, a
training step with torch's AdamW and with the PortableAdamW that training
uses (docs/REPRODUCIBILITY.md quotes both).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[1] / "workflow"

PINS = {
    "native (no pin)": {},
    "MKL COMPATIBLE only": {"MKL_CBWR": "COMPATIBLE"},
    "AVX2 caps, MKL unpinned": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "portable (clipeval: AVX2 caps, MKL COMPATIBLE)": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_CBWR": "COMPATIBLE",
    },
    "lowest (SSE4.1 caps, default ATen, MKL COMPATIBLE)": {
        "ATEN_CPU_CAPABILITY": "default",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "MKL_CBWR": "COMPATIBLE",
    },
}
# What another CPU would offer the libraries: its caps apply on top of a pin
# only where they are lower.
IMITATIONS = {
    "this CPU": {},
    "an AVX2 CPU": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "MKL as on an SSE4 CPU": {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}
ISA_ORDER = {
    "ATEN_CPU_CAPABILITY": ["default", "avx2", "avx512"],
    "ONEDNN_MAX_CPU_ISA": ["SSE41", "AVX2", "AVX512_CORE"],
}

PROBE = r"""
import hashlib, json, os, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
import open_clip
import clipeval.models.open_clip_models
from clipeval.models.optimizer import PortableAdamW
from clipeval.models.training import contrastive_loss
torch.manual_seed(0)
model = open_clip.create_model("clipeval-tiny")
tokens = open_clip.get_tokenizer("clipeval-tiny")([f"a shape number {i}" for i in range(128)])
images = torch.randn(128, 3, 64, 64, generator=torch.Generator().manual_seed(1))
model.eval()
with torch.inference_mode():
    features = model.encode_image(images[:64]).numpy().tobytes()
optimizer = (PortableAdamW if sys.argv[2] == "portable" else torch.optim.AdamW)(model.parameters(), lr=1e-3)
model.train()
times = []
for _ in range(4):
    start = time.perf_counter()
    loss = contrastive_loss(model.encode_image(images), model.encode_text(tokens), model.logit_scale)
    optimizer.zero_grad(); loss.backward(); optimizer.step()
    times.append(time.perf_counter() - start)
weights = hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in model.state_dict().values())).hexdigest()
digest = hashlib.sha256(features).hexdigest()[:12]
print(json.dumps({"step": min(times[1:]), "weights": weights[:12], "features": digest}))
"""


def combine(pin, imitation):
    """The settings a pinned run gets on an imitated CPU: the lower of the two caps."""
    env = dict(pin)
    for key, cap in imitation.items():
        order = ISA_ORDER.get(key)
        env[key] = min(env[key], cap, key=order.index) if order and key in env else cap
    return env


def probe(env, threads, optimizer="portable"):
    full_env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT), "MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE", **env}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(threads), optimizer], env=full_env, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def print_table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def compare_optimizers():
    portable = PINS["portable (clipeval: AVX2 caps, MKL COMPATIBLE)"]
    # Alternated and repeated: a step's time varies by a third between runs on a shared machine.
    steps = {"torch": float("inf"), "portable": float("inf")}
    for _ in range(3):
        for name in steps:
            steps[name] = min(steps[name], probe(portable, 2, name)["step"])
    print_table(
        ("optimizer (portable pin, 2 threads)", "train step", "vs torch.optim.AdamW"),
        [
            (name, f"{step:.3f} s", f"{step / steps['torch']:.2f}×")
            for name, step in (
                ("torch.optim.AdamW", steps["torch"]),
                ("PortableAdamW (exact square root)", steps["portable"]),
            )
        ],
    )


def main():
    rows, native_step = [], None
    for name, pin in PINS.items():
        runs = {
            (cpu, threads): probe(combine(pin, imitation), threads)
            for cpu, imitation in IMITATIONS.items()
            for threads in (1, 2)
        }
        step = runs[("this CPU", 2)]["step"]
        native_step = native_step or step
        same_cpu = {runs[(cpu, 2)]["weights"] for cpu in IMITATIONS}
        same_threads = {runs[("this CPU", t)]["weights"] for t in (1, 2)}
        features = {runs[(cpu, t)]["features"] for cpu in IMITATIONS for t in (1, 2)}
        rows.append(
            (
                name,
                f"{step:.2f} s",
                f"{step / native_step:.2f}×",
                "same" if len(same_cpu) == 1 else f"{len(same_cpu)} different",
                "same" if len(same_threads) == 1 else "differ",
                "same" if len(features) == 1 else f"{len(features)} different",
            )
        )
    header = (
        "pin",
        "train step (2 threads)",
        "vs native",
        "weights on 3 imitated CPUs",
        "weights at 1 vs 2 threads",
        "features at 1 and 2 threads on 3 imitated CPUs",
    )
    print_table(header, rows)
    print()
    compare_optimizers()


if __name__ == "__main__":
    main()
