"""What Snakemake plans for the default config and every example: jobs and shell commands, one text.

    .venv/bin/python scripts/plan_snapshot.py > plans.txt

Each config runs as `snakemake --dry-run --printshellcmds` in a temporary copy
of the workflow, with empty stand-ins for the files and folders it names
(tests/test_examples.py's), so the examples plan without their data. The
output leaves out what differs between runs (times, the temporary folder, the
order of the jobs), so two snapshots taken before and after a change to the
planning code are equal exactly when it plans the same jobs with the same
commands.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from snakemake_runner import copy_workflow  # noqa: E402
from test_examples import EXAMPLES, create_named_inputs  # noqa: E402

# Times, run ids, and why a job runs (files listed in set order, which varies between processes).
VOLATILE = re.compile(r"^\s*(\[\w{3} \w{3} +\d+ [\d:]+ \d{4}\]|Building DAG|host: |Date: |Workflow ID: |reason: )")


JOB_HEADER = re.compile(r"^(local)?(rule|checkpoint) \w+:$")


def plan(config_path: Path) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        workdir = copy_workflow(Path(scratch) / "workflow")
        create_named_inputs(workdir, yaml.safe_load(config_path.read_text()))
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "--dry-run",
                "--printshellcmds",
                "--configfile",
                str(config_path.relative_to(REPO)),
            ],
            cwd=workdir,
            capture_output=True,
            text=True,
        )
        output = (result.stdout + result.stderr).replace(str(workdir), "<workdir>")
    # Jobs are printed in an order that varies between runs: each job's lines, sorted by job.
    lines = [line for line in output.splitlines() if line.strip() and not VOLATILE.match(line)]
    blocks, current = [], []
    for line in lines:
        if JOB_HEADER.match(line) and current:
            blocks.append("\n".join(current))
            current = []
        current.append(line)
    blocks = sorted(blocks + ["\n".join(current)])
    return f"## {config_path.relative_to(REPO)} (exit {result.returncode})\n" + "\n\n".join(blocks) + "\n"


if __name__ == "__main__":
    for path in [REPO / "config/config.yaml", *EXAMPLES]:
        sys.stdout.write(plan(path))
