"""Which models a run checks as it starts, before its first job (`clipeval check-models`: the arch, the
pretrained tag or the checkpoint's fit, the precision on the device), and the record of the checks passed.

The check imports torch and open_clip, seconds that a plan should not cost, so it runs once per model
definition: a passed check leaves an empty file named by a digest of everything it depended on (the entry, the
checkpoint's content, the checking code and, where the device was checked, this machine), and a run finds it.
"""

import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from clipeval.data.sources import FILE
from clipeval.models.pretrained import is_checkpoint_path
from clipeval.planning.plan import ConfigError, Plan
from clipeval.planning.series import config_name
from clipeval.warm_jobs.decide import THREAD_VARIABLES

PASSED = Path(".snakemake/clipeval-model-checks")
UNCHECKED_DEVICE = "-"


def check_arguments(plan: Plan, check_device: bool) -> list[list[str]]:
    """The words of `check-models --model` for each model a job builds: NAME ARCH PRETRAINED PRECISION
    PRECISION_KEY DEVICE WEIGHTS_KEY, once for the epochs of a trained series. A checkpoint the workflow trains
    is not there to check yet; the weights a fine-tune starts from (`train.from`) are."""
    trained = {
        plan.artifact("checkpoint", model=name) for name, entry in plan.config["models"].items() if "train" in entry
    }
    device = plan.config["extract"]["device"] if check_device else UNCHECKED_DEVICE
    words = []
    for model, entry in plan.config["models"].items():
        if plan.is_features_model(model):
            continue
        name = config_name(plan.config, model) if "train" in entry else model
        pretrained, weights_key = entry.get("pretrained", ""), f"models.{name}.pretrained"
        if "from" in entry.get("train", {}):
            pretrained, weights_key = entry["train"]["from"], f"models.{name}.train.from"
        precision_key = f"models.{name}.precision" if "precision" in entry else "extract.precision"
        checked = [name, entry["arch"], "" if pretrained in trained else pretrained, plan.model_precision(model)]
        checked += [precision_key, device, weights_key]
        if checked not in words:
            words.append(checked)
    return words


def passed_name(words: list[str], content_digest, code: str) -> str:
    """The name of the record of a model's passed check: a digest of what the check's answer depends on."""
    _, _, pretrained, _, _, device, _ = words
    checkpoint = content_digest(FILE, pretrained) if is_checkpoint_path(pretrained) else None
    machine = None if device == UNCHECKED_DEVICE else [platform.node(), os.environ.get("CUDA_VISIBLE_DEVICES")]
    described = json.dumps([words, checkpoint, code, machine])
    return hashlib.sha256(described.encode()).hexdigest()[:32]


def check_models(plan: Plan, check_device: bool, content_digest, code: str, run_check, passed: Path = PASSED):
    """Raise ConfigError with the first problem of the models not checked before; record those that pass.
    `run_check(words)` runs `check-models` with these words and returns the lines of its problems."""
    unchecked = [
        (words, passed / passed_name(words, content_digest, code)) for words in check_arguments(plan, check_device)
    ]
    unchecked = [(words, record) for words, record in unchecked if not record.exists()]
    if not unchecked:
        return
    problems = run_check([word for words, _ in unchecked for word in ("--model", *words)])
    if problems:
        raise ConfigError(problems[0])
    passed.mkdir(parents=True, exist_ok=True)
    for _, record in unchecked:
        record.touch()


def check_in_subprocess(words: list[str], package_parent: Path, first_on_path=(), threads: int = 1) -> list[str]:
    """The problem lines of `clipeval check-models WORDS`, run as the workflow's jobs are: by the `python` first
    on `first_on_path` (a warm run's), else beside the interpreter that runs Snakemake, with the package of this
    checkout. It computes nothing, so its `threads` are those of the jobs that build models next: in a warm run
    their server is the check's (clipeval/warm_jobs/), and has imported torch by the time they start."""
    folders = [*map(str, first_on_path), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    environment = {
        **os.environ,
        "PATH": os.pathsep.join(folders),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(package_parent), os.environ.get("PYTHONPATH")])),
        **dict.fromkeys(THREAD_VARIABLES, str(threads)),
    }
    command = ["python", "-m", "clipeval", "check-models", *words]
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode == 0:
        return []
    last = (result.stderr.strip().splitlines() or ["no output"])[-1]
    return result.stdout.splitlines() or [f"models: the check of the models failed: {last}"]
