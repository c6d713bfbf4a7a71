"""Where the test suite's CPU time goes, by the kind of process that spent it.

    .venv/bin/python scripts/suite_census.py            # the whole suite, as `make test` runs it
    .venv/bin/python scripts/suite_census.py tests/test_caching.py -n 0

Runs pytest with a `sitecustomize` module on PYTHONPATH (jobs keep it: the
workflow's shell prefix appends to PYTHONPATH). Every Python process of the
run, pytest's workers, Snakemake and each job, then records at exit what it
was, the test that started it (PYTEST_CURRENT_TEST, which subprocesses
inherit) and the CPU seconds it used itself. The first table sums them by
kind: a `python -m clipeval` command by its subcommand, Snakemake by how it
was started; the next two by test file and by test. Some CPU time is not
recorded: a process that ends without running its exit handlers (killed by
a signal, or a multiprocessing worker such as extraction's loader workers),
and anything that is not Python (sbatch, squeue). The last line compares what was recorded with the CPU time of all
of pytest's waited-for descendants, the base of the share column; the SLURM
daemons are not among them.
"""

import os
import resource
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HOOK = r"""
import atexit, os, resource, sys

def _record(log=os.environ.get("CLIPEVAL_CENSUS_LOG")):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    arguments = " ".join(sys.argv[:3]).replace("\t", " ").replace("\n", " ")
    test = os.environ.get("PYTEST_CURRENT_TEST", "").replace("\t", " ")
    try:
        with open(log, "a") as handle:
            handle.write(f"{usage.ru_utime + usage.ru_stime:.3f}\t{arguments}\t{test}\n")
    except OSError:  # a process the tests hold to a file size limit (a full disk's stand-in) goes unrecorded
        pass

if os.environ.get("CLIPEVAL_CENSUS_LOG"):
    atexit.register(_record)

# This module hides any other sitecustomize (a distribution's own, say): run the next one on the path.
def _run_shadowed():
    import importlib.machinery, importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))

_run_shadowed()
"""


def process_kind(arguments: str) -> str:
    """'clipeval train', 'snakemake --dry-run', … from a process's first three arguments."""
    words = arguments.split()
    program = Path(words[0]) if words else Path()
    for package in ("clipeval", "snakemake"):
        # `python -m package` runs package/__main__.py; the console script is bin/package
        if program.parts[-2:] == (package, "__main__.py") or program.name == package:
            detail = words[1] if len(words) > 1 else ""
            if package == "snakemake" and not detail.startswith("--"):
                detail = ""
            return f"{package} {detail}".strip()
    return "other Python (pytest and its workers, the tests' own scripts)"


def started_by(current_test: str) -> str:
    """'tests/x.py::test_y[row]' from PYTEST_CURRENT_TEST ('… (setup)'); module fixtures count as setup."""
    return current_test.rsplit(" (", 1)[0] if current_test else ""


def census(log_lines, key=lambda arguments, test: process_kind(arguments)):
    """{key: [processes, CPU seconds]} from the hook's log lines, by process kind unless `key` says otherwise."""
    groups = defaultdict(lambda: [0, 0.0])
    for line in log_lines:
        seconds, arguments, test = (line.rstrip("\n").split("\t") + [""])[:3]
        entry = groups[key(arguments, started_by(test))]
        entry[0] += 1
        entry[1] += float(seconds)
    return dict(groups)


def print_table(title, groups, total, rows=None):
    print(f"\n| {title} | processes | CPU s | CPU s each | share |")
    print("|---|---|---|---|---|")
    for name, (count, seconds) in sorted(groups.items(), key=lambda item: -item[1][1])[:rows]:
        print(f"| {name} | {count} | {seconds:,.0f} | {seconds / count:.2f} | {seconds / total:.0%} |")


def main(pytest_arguments):
    with tempfile.TemporaryDirectory() as scratch:
        hook_dir = Path(scratch) / "hook"
        hook_dir.mkdir()
        (hook_dir / "sitecustomize.py").write_text(HOOK)
        log = Path(scratch) / "census.tsv"
        log.touch()
        env = {
            **os.environ,
            "CLIPEVAL_CENSUS_LOG": str(log),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(hook_dir), os.environ.get("PYTHONPATH")])),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        result = subprocess.run([sys.executable, "-m", "pytest", *pytest_arguments], cwd=REPO, env=env)
        lines = log.read_text().splitlines()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = children.ru_utime + children.ru_stime
    kinds = census(lines)
    recorded = sum(seconds for _, seconds in kinds.values())
    print_table("process", kinds, total)
    # The processes a test started (Snakemake, its jobs, commands), by the test;
    # a module-scoped fixture's runs count to the first test that asked for it.
    # What a test computes in pytest's own process is not split by test.
    in_tests = {name: entry for name, entry in census(lines, key=lambda arguments, test: test).items() if name}
    outside = "(none: pytest's own processes, their CPU in the tests included)"
    print_table("test file", census(lines, key=lambda arguments, test: test.split("::")[0] or outside), total)
    print_table("test (the 25 costliest)", in_tests, total, rows=25)
    print(
        f"\nrecorded {recorded:,.0f} of {total:,.0f} CPU s of pytest and its descendants;"
        f" pytest exited with {result.returncode}"
    )
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
