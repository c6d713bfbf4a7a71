"""A sweep of many checkpoints: planning it, and its comparison jobs.

Each config evaluates N local checkpoints on the default experiment's three
datasets plus a second retrieval split; every model's checkpoint is one
placeholder file (a dry run reads none). The floor is the dry run of the
same datasets with one model, measured in the same run. Comparisons are one
job per dataset, whatever N; `compare.baseline` turns every two models
(N(N-1)/2 comparisons in that job) into each model against the baseline (N-1).

A comparison job's time grows with the comparisons it holds: the second
table runs `compare_all`, as `clipeval compare-models` does, on ranks records
at the Flickr30k-1K shape with 1000 bootstrap replicates, against one
comparison of two models measured in the same run.
"""

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from measure import best_seconds, print_table

from clipeval.commands._options import at_least

REPOSITORY = Path(__file__).resolve().parent.parent


def sweep_config(num_models, checkpoint, baseline):
    config = yaml.safe_load((REPOSITORY / "config/config.yaml").read_text())
    datasets = config["datasets"]
    datasets["shapes-test-b"] = {**datasets["shapes-test"], "seed": 5, "first_image_id": 300000}
    config["models"] = {
        f"checkpoint-{index:03d}": {"arch": "clipeval-tiny", "pretrained": str(checkpoint)}
        for index in range(num_models)
    }
    if baseline:
        config["compare"] = {"baseline": "checkpoint-000"}
    return config


def dry_run(workdir, config):
    """(fastest seconds of two, {rule: jobs}) of `snakemake -n` on `config`."""
    config_file = workdir / "sweep.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--cores",
        "2",
        "-s",
        str(REPOSITORY / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config_file),
    ]
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
        if result.returncode != 0:
            raise SystemExit(f"dry run failed: {result.stderr[-2000:]}")
    stats = result.stdout[result.stdout.rindex("Job stats:") :]
    jobs = {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", stats, re.MULTILINE)}
    return best, jobs


def ranks_record(rng, texts=5_000, images=1_000):
    """A ranks record as score-retrieval writes it, with ranks drawn like a weak model's."""

    def direction(count, success):
        return {"query_ids": list(range(count)), "folds": [0] * count, "ranks": rng.geometric(success, count).tolist()}

    return {
        "task": "retrieval",
        "protocol": "full",
        "folds": 1,
        "recall_at": [1, 5, 10],
        "t2i": direction(texts, 0.1),
        "i2t": direction(images, 0.2),
    }


def comparison_rows(num_models, workdir):
    import orjson

    from clipeval.comparison import compare_all

    rng = np.random.default_rng(0)
    paths = []
    for index in range(num_models):
        paths.append(workdir / f"ranks-{index}.json")
        paths[-1].write_bytes(orjson.dumps(ranks_record(rng)))
    names = [f"checkpoint-{index}" for index in range(num_models)]
    floor = best_seconds(lambda: compare_all(names[:2], paths[:2], None, 1000, 0), repeats=2)
    rows = [["2 models (floor)", "1", f"{floor:.2f}", "1.00", f"{floor:.2f}"]]
    for baseline in (names[0], None):
        seconds = best_seconds(lambda: compare_all(names, paths, baseline, 1000, 0), repeats=1)
        count = num_models - 1 if baseline else num_models * (num_models - 1) // 2
        rows.append(
            [
                f"{num_models} models" + (", compare.baseline" if baseline else ""),
                str(count),
                f"{seconds:.2f}",
                f"{seconds / floor:.2f}",
                f"{seconds / count:.2f}",
            ]
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=at_least(1), nargs="+", default=[10, 100])
    parser.add_argument("--compared", type=at_least(2), default=6, help="models in the timed comparison job")
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
                rows.append(
                    [
                        f"{num_models} models" + (", compare.baseline" if baseline else ""),
                        f"{jobs['total']:,}",
                        str(jobs.get("compare_models", 0)),
                        f"{comparisons:,}",
                        f"{seconds:.1f}",
                        f"{seconds / floor:.2f}",
                    ]
                )
        print_table(
            "planning a sweep (4 datasets)",
            ["config", "jobs", "compare jobs", "comparisons per dataset", "dry run s", "× floor"],
            rows,
        )
        print_table(
            "one comparison job, Flickr30k-1K shape, 1000 replicates",
            ["models", "comparisons", "seconds", "× floor", "seconds per comparison"],
            comparison_rows(args.compared, workdir),
        )


if __name__ == "__main__":
    sys.exit(main())
