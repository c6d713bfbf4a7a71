"""Measure what OpenMP's wait policy does to training when two jobs share the cores.

    .venv/bin/python scripts/measure_wait_policy.py

The test suite runs two workers whose jobs each compute with two threads, on
as few as two cores (tests/conftest.py sets OMP_WAIT_POLICY=PASSIVE). This
times a training step of the demo model (batch 128, the portable numerics
pin) alone and with a second identical process running beside it, with the
variable unset (the OpenMP runtime's default) and under each policy, and
prints one table relative to the step alone with it unset, measured in the
same run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[1] / "workflow"

PROBE = r"""
import json, time
from clipeval.models.numerics import pin
pin("portable")
import torch, open_clip
import clipeval.models.build
from clipeval.models.optimizer import PortableAdamW
from clipeval.models.training import contrastive_loss
torch.manual_seed(0)
model = open_clip.create_model("clipeval-tiny")
optimizer = PortableAdamW(model.parameters(), lr=1e-3)
images = torch.randn(128, 3, 64, 64, generator=torch.Generator().manual_seed(1))
tokens = open_clip.get_tokenizer("clipeval-tiny")([f"a shape number {i}" for i in range(128)])
def step():
    loss = contrastive_loss(model.encode_image(images), model.encode_text(tokens), model.logit_scale)
    optimizer.zero_grad(); loss.backward(); optimizer.step()
step()
start = time.perf_counter()
for _ in range(8):
    step()
print(json.dumps({"step": (time.perf_counter() - start) / 8}))
"""


def steps(policy: str, processes: int) -> list[float]:
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    env.update({"PYTHONPATH": str(PACKAGE_PARENT), **({"OMP_WAIT_POLICY": policy} if policy != "unset" else {})})
    running = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        for _ in range(processes)
    ]
    return [json.loads(process.communicate()[0].strip().splitlines()[-1])["step"] for process in running]


def main():
    rows = {
        (policy, processes): max(steps(policy, processes))
        for policy in ("unset", "ACTIVE", "PASSIVE")
        for processes in (1, 2)
    }
    baseline = rows[("unset", 1)]
    print(f"cores: {os.cpu_count()}")
    print("| OMP_WAIT_POLICY | training processes at once | s per step (slowest) | vs unset, alone |")
    print("|---|---|---|---|")
    for (policy, processes), step in rows.items():
        print(f"| {policy} | {processes} | {step:.3f} | {step / baseline:.2f}× |")


if __name__ == "__main__":
    main()
