"""What each pin of the portable numerics profile costs: a forward block of ViT-B-32's text and image towers.

The portable profile (workflow/clipeval/models/numerics.py) pins four things
so that every AVX2 CPU computes the same bits: MKL's conditional-numerical-
reproducibility branch (MKL_CBWR=COMPATIBLE), ATen's and oneDNN's vector
width (AVX2), and two threads. Each row times one forward block (64
captions of 77 tokens, or 64 images of 224 × 224: extraction's fixed block)
of ViT-B-32 with random weights, fp32, in a fresh process, the best of
`--repeats` blocks after one to warm up: the native code path, the whole
portable profile, and the portable profile with one of its pins released.
A pin whose release brings the time near native's is where the cost is.
Threads are two in every row, as portable computes with two.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from measure import exit_status, print_table

PACKAGE_PARENT = Path(__file__).resolve().parents[1] / "workflow"
PINS = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
SETTINGS = {
    "native": {},
    "portable": PINS,
    **{f"portable, {name} released": {k: v for k, v in PINS.items() if k != name} for name in PINS},
}

PROBE = r"""
import json, sys, time
import torch, open_clip
torch.set_num_threads(2)
torch.manual_seed(0)
model = open_clip.create_model("ViT-B-32").eval()
tokens = open_clip.get_tokenizer("ViT-B-32")([f"a photo of a shape number {i} on a mat" for i in range(64)])
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
    text, image = best(model.encode_text, tokens, repeats), best(model.encode_image, images, repeats)
    print(json.dumps({"text": text, "image": image}))
"""


def block_seconds(pins: dict, repeats: int) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in PINS}
    env.update(pins, PYTHONPATH=str(PACKAGE_PARENT), OMP_WAIT_POLICY="PASSIVE")
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
        [
            name,
            f"{s['text']:.2f}",
            f"{s['text'] / native['text']:.2f}",
            f"{s['image']:.2f}",
            f"{s['image'] / native['image']:.2f}",
        ]
        for name, s in seconds.items()
    ]
    print_table(
        "the portable profile's pins: one forward block of ViT-B-32 (64 captions or 64 images, fp32, 2 threads)",
        ["code path", "text s", "× native", "image s", "× native"],
        rows,
    )


if __name__ == "__main__":
    sys.exit(exit_status(main))
