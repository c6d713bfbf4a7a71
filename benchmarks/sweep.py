"""Planning a sweep of many checkpoints: the dry run and its jobs, against the same config with one model.

Each config evaluates N local checkpoints on the default experiment's three
datasets plus a second retrieval split; every model's checkpoint is one
placeholder file (a dry run reads none). The floor is the dry run of the
same datasets with one model, measured in the same run. Comparisons are one
job per dataset, whatever N; `compare.baseline` turns every two models
(N(N-1)/2 comparisons in that job) into each model against the baseline (N-1).
"""

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from measure import print_table

REPOSITORY = Path(__file__).resolve().parent.parent


def sweep_config(num_models, checkpoint, baseline):
    config = yaml.safe_load((REPOSITORY / "config/config.yaml").read_text())
    datasets = config["datasets"]
    datasets["shapes-test-b"] = {**datasets["shapes-test"], "seed": 5, "first_image_id": 300000}
    config["models"] = {f"checkpoint-{index:03d}": {"arch": "clipeval-tiny", "pretrained": str(checkpoint)}
                        for index in range(num_models)}
    if baseline:
        config["compare"] = {"baseline": "checkpoint-000"}
    return config


def dry_run(workdir, config):
    """(fastest seconds of two, {rule: jobs}) of `snakemake -n` on `config`."""
    config_file = workdir / "sweep.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    command = [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "-s", str(REPOSITORY / "Snakefile"),
               "--directory", str(workdir), "--configfile", str(config_file)]
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
        if result.returncode != 0:
            raise SystemExit(f"dry run failed: {result.stderr[-2000:]}")
    stats = result.stdout[result.stdout.rindex("Job stats:"):]
    jobs = {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", stats, re.MULTILINE)}
    return best, jobs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[10, 100])
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        checkpoint = workdir / "checkpoint.pt"
        checkpoint.write_bytes(b"a dry run does not read it")
        floor, jobs = dry_run(workdir, sweep_config(1, checkpoint, baseline=False))
        rows.append(["1 model (floor)", f"{jobs['total']:,}", "0", "0", f"{floor:.1f}", "1.00"])
        for num_models in args.models:
            for baseline in (False, True):
                seconds, jobs = dry_run(workdir, sweep_config(num_models, checkpoint, baseline))
                comparisons = num_models - 1 if baseline else num_models * (num_models - 1) // 2
                rows.append([f"{num_models} models" + (", compare.baseline" if baseline else ""),
                             f"{jobs['total']:,}", str(jobs.get("compare_models", 0)), f"{comparisons:,}",
                             f"{seconds:.1f}", f"{seconds / floor:.2f}"])
    print_table("planning a sweep (4 datasets)",
                ["config", "jobs", "compare jobs", "comparisons per dataset", "dry run s", "× floor"], rows)


if __name__ == "__main__":
    sys.exit(main())
