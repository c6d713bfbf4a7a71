"""The workflow and its report run on the runtime dependencies alone (pyproject.toml's dependencies and the
`cpu` extra, and what they require), without what only the tests, the linters or the cluster set-up bring.

Installing a second environment would take minutes; instead every Python process of the run (Snakemake,
each job, the report) gets a sitecustomize module that makes the modules of every other installed
distribution unimportable, as if they were not installed.
"""

import re
import shutil
import tomllib
from importlib import metadata

import pytest
from conftest import REPO
from packaging.requirements import Requirement
from snakemake_runner import copy_experiment, edit_config, recorded_folders, run_jobs, snakemake

pytestmark = pytest.mark.workflow

BLOCKER = """import importlib.abc, importlib.machinery, json, os, sys

_BLOCKED = set(json.loads(os.environ["CLIPEVAL_BLOCKED_MODULES"]))


class _Absent(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f"No module named {spec.name!r} (not a runtime dependency)", name=spec.name)

    def exec_module(self, module):
        pass


class _NotInstalled(importlib.abc.MetaPathFinder):
    # A spec without an origin: find_spec probes (torch's) see nothing to load, imports fail as if absent.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            return importlib.machinery.ModuleSpec(name, _Absent(), origin=None)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure():
    """Normalized names of the distributions the runtime requirements reach, extras followed."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pending = [Requirement(text) for text in [*project["dependencies"], *project["optional-dependencies"]["cpu"]]]
    seen = {normalized(project["name"])}
    while pending:
        requirement = pending.pop()
        name = normalized(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            child = Requirement(text)
            markers = [{"extra": extra} for extra in requirement.extras] or [{"extra": ""}]
            if child.marker is None or any(child.marker.evaluate(environment) for environment in markers):
                pending.append(child)
    return seen


def top_level_modules(distribution):
    text = distribution.read_text("top_level.txt")
    if text:
        return set(text.split())
    names = set()
    for file in distribution.files or []:
        first = file.parts[0]
        if first.endswith((".dist-info", ".data")) or first in ("..", "__pycache__"):
            continue
        names.add(first.removesuffix(".py") if len(file.parts) == 1 else first)
    return {name for name in names if name.isidentifier()}


def modules_outside(closure):
    """Top-level modules of installed distributions outside the closure, minus any that a distribution inside
    it also provides (namespace packages such as nvidia). pip's own tools aside, and Snakemake's plugins (the
    cluster extra): Snakemake finds those by their files and imports them, which no import hook can hide."""
    inside, outside = set(), set()
    for distribution in metadata.distributions():
        name = normalized(distribution.metadata["Name"])
        if name in ("pip", "setuptools", "wheel") or name.startswith("snakemake-"):
            continue
        (inside if name in closure else outside).update(top_level_modules(distribution))
    return sorted(outside - inside)


def test_the_test_only_packages_are_what_gets_blocked():
    blocked = modules_outside(runtime_closure())
    assert {"pytest", "hypothesis", "sklearn", "playwright", "xdist"} <= set(blocked)
    assert not {"torch", "open_clip", "faiss", "snakemake", "lmdb", "matplotlib", "pandas", "pygments"} & set(blocked)


def test_the_workflow_and_its_report_run_on_runtime_dependencies_alone(small_experiment_run, tmp_path):
    import json

    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    environment = {
        "PYTHONPATH": str(blocker),
        "CLIPEVAL_BLOCKED_MODULES": json.dumps(modules_outside(runtime_closure())),
    }
    workdir = copy_experiment(small_experiment_run.workdir, tmp_path / "experiment")
    # Extraction, knn, scoring, the summary and the report's jobs run again: one dataset's features are gone,
    # and the other dataset is scored with other settings.
    shutil.rmtree(workdir / recorded_folders(workdir, "small")["features"]["tiny on cn-test"])
    edit_config(workdir, lambda config: config["metrics"].update(bootstrap=100))
    ran = run_jobs(workdir, env=environment)
    assert {"extract_text_features", "extract_image_shard", "knn", "score_retrieval", "summary"} <= set(ran), ran
    assert {"retrieval_failures", "plot_retrieval", "report_tables"} <= set(ran), ran
    report = snakemake(workdir, "--report", "results/report.html", env=environment)
    assert report.returncode == 0, report.stderr[-3000:]
    assert (workdir / "results/report.html").stat().st_size > 100_000
