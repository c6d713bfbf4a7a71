"""What each pin of the portable numerics profile costs: a forward block of ViT-B-32's text and image towers.

The portable profile (workflow/clipeval/numerics.py) pins four things
so that every AVX2 CPU computes the same bits: MKL's conditional-numerical-
reproducibility branch (MKL_CBWR=COMPATIBLE), ATen's and oneDNN's vector
width (AVX2), and two threads. Each row times one forward block (64
captions, or 64 images of 224 × 224: extraction's fixed block)
of ViT-B-32 with random weights, fp32, in a fresh process, the best of
`--repeats` blocks after one to warm up: the native code path, the whole
portable profile, and the portable profile with one of its pins released.
A pin whose release brings the time near native's is where the cost is.
Threads are two in every row, as portable computes with two. The captions
are the peer benchmark's Flickr-length ones, each block timed at the whole
context (the model's own encode_text) and as extraction encodes it, through
its longest caption (clipeval/features/text_span.py).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from measure import exit_status, print_table

from clipeval.numerics import PORTABLE_ENVIRONMENT

BENCHMARKS = Path(__file__).resolve().parent
PACKAGE_PARENT = BENCHMARKS.parent / "workflow"
# The pins that choose kernels; the profile's others (no dynamic thread counts) go with each row of it.
PINS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
TOWERS = {"text": "text, whole context", "cut": "text, through the longest caption", "image": "image"}
SETTINGS = {
    "native": {},
    "portable": PORTABLE_ENVIRONMENT,
    **{f"portable, {name} released": {k: v for k, v in PORTABLE_ENVIRONMENT.items() if k != name} for name in PINS},
}

PROBE = r"""
import json, sys, time
import torch, open_clip
from clipeval.features.text_span import unit_caption_features
from peer import captions
torch.set_num_threads(2)
torch.manual_seed(0)
model = open_clip.create_model("ViT-B-32").eval()
tokens = open_clip.get_tokenizer("ViT-B-32")([text for five in captions(13, seed=1) for text in five][:64])
images = torch.randn(64, 3, 224, 224, generator=torch.Generator().manual_seed(1))
def best(encode, data, repeats):
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        encode(data)
        times.append(time.perf_counter() - start)
    return min(times[1:])
with torch.inference_mode():
    repeats = int(sys.argv[1])
    text = best(model.encode_text, tokens, repeats)
    cut = best(lambda t: unit_caption_features(model, t), tokens, repeats)
    print(json.dumps({"text": text, "cut": cut, "image": best(model.encode_image, images, repeats)}))
"""


def block_seconds(pins: dict, repeats: int) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in PORTABLE_ENVIRONMENT}
    env.update(pins, PYTHONPATH=os.pathsep.join([str(PACKAGE_PARENT), str(BENCHMARKS)]), OMP_WAIT_POLICY="PASSIVE")
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(repeats)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="timed blocks per tower, after one to warm up")
    args = parser.parse_args(argv)
    seconds = {name: block_seconds(pins, args.repeats) for name, pins in SETTINGS.items()}
    native = seconds["native"]
    rows = [
        [name]
        + [
            f"{s[tower]:.2f}" if column == "s" else f"{s[tower] / native[tower]:.2f}"
            for tower in TOWERS
            for column in "s×"
        ]
        for name, s in seconds.items()
    ]
    print_table(
        "the portable profile's pins: one forward block of ViT-B-32 (64 captions or 64 images, fp32, 2 threads)",
        ["code path"] + [f"{label} {unit}" for label in TOWERS.values() for unit in ("s", "× native")],
        rows,
    )


if __name__ == "__main__":
    sys.exit(exit_status(main))
