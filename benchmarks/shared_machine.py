"""Jobs sharing the cores: a training step alone and beside identical ones, by OpenMP's wait policy.

Workflow jobs compute with two threads each (the portable numerics profile),
and on a shared machine, or with `--cores` above the machine's, several run
at once. OpenMP threads that spin while they wait for work take the cores
the other jobs compute with. `numerics.pin` therefore sets
`OMP_WAIT_POLICY=PASSIVE` unless the caller sets it; before, jobs ran with
OpenMP's default (spin a while, then sleep). Each row times a training step
of the demo model (batch 128, portable numerics) in each of N identical
processes started together, the slowest process's mean over 8 steps, against
one process alone with the same policy, and against one alone as jobs ran
before, measured in the same run.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from measure import exit_status, print_table

PACKAGE_PARENT = Path(__file__).resolve().parents[1] / "workflow"

PROBE = r"""
import json, sys, time
from clipeval import numerics
if sys.argv[1] == "default":
    numerics.WAIT_POLICY = ("CLIPEVAL_WAIT_POLICY_LEFT_UNSET", "")  # as jobs ran before pin set it
numerics.pin("portable")
import open_clip, torch
import clipeval.models.open_clip_models
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

POLICIES = {"default": "OpenMP's default (jobs before)", "pinned": "PASSIVE (numerics.pin, jobs now)"}


def slowest_step(policy: str, processes: int) -> float:
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(PACKAGE_PARENT)
    running = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE, policy], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        for _ in range(processes)
    ]
    return max(json.loads(process.communicate()[0].strip().splitlines()[-1])["step"] for process in running)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 3], help="training processes at once")
    args = parser.parse_args(argv)
    steps = {(policy, n): slowest_step(policy, n) for n in args.processes for policy in POLICIES}
    before_alone = steps["default", min(args.processes)]
    rows = [
        [
            POLICIES[policy],
            n,
            f"{step:.3f}",
            f"{step / steps[policy, min(args.processes)]:.2f}",
            f"{step / before_alone:.2f}",
        ]
        for (policy, n), step in sorted(steps.items(), key=lambda item: (item[0][1], item[0][0]))
    ]
    print_table(
        f"jobs sharing {os.cpu_count()} cores: a training step in each of N processes at once",
        ["OMP_WAIT_POLICY", "processes", "s per step (slowest)", "× alone, same policy", "× alone, before"],
        rows,
    )


if __name__ == "__main__":
    sys.exit(exit_status(main))
