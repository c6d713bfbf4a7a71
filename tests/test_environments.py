"""The conda environment the rules name (envs/clipeval.yaml) is the tested stack: the versions
constraints.txt pins, and every runtime dependency of pyproject.toml that a job imports."""

import re
import tomllib

import yaml
from conftest import REPO

# pip's names for what conda-forge calls otherwise.
CONDA_NAME = {
    "torch": "pytorch",
    "open_clip_torch": "open-clip-torch",
    "lmdb": "python-lmdb",
    "matplotlib": "matplotlib-base",
    "faiss-cpu": "faiss-gpu",
}
# Read while Snakemake plans, never by a job: they belong to the environment that runs Snakemake.
PLANNING_ONLY = {"snakemake", "pyyaml", "jsonschema"}
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)\s*(?:(==|>=|=)\s*([^\s;]+))?")


def requirement(text):
    name, operator, version = REQUIREMENT.match(text.strip()).groups()
    return name.lower().replace("_", "-"), operator, version


def conda_dependencies():
    """{name: (name, operator, version)} of the environment's packages, pip's section with conda's, its pins
    written as conda writes them (=)."""
    entries = yaml.safe_load((REPO / "envs/clipeval.yaml").read_text())["dependencies"]
    listed = [entry for entry in entries if isinstance(entry, str)]
    from_pip = [entry for section in entries if isinstance(section, dict) for entry in section["pip"]]
    found = {requirement(entry)[0]: requirement(entry) for entry in listed}
    for entry in from_pip:
        name, operator, version = requirement(entry)
        found[name] = (name, "=" if operator == "==" else operator, version)
    return found


def test_the_conda_environment_pins_what_constraints_txt_pins():
    pins = [
        requirement(line)
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    runtime = {
        requirement(dependency)[0]
        for dependency in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    conda = conda_dependencies()
    for name, _, version in pins:
        if name not in runtime:
            continue  # the linters: not a job's
        conda_name = CONDA_NAME.get(name, name).lower()
        assert conda_name in conda, f"envs/clipeval.yaml lacks {conda_name}, which constraints.txt pins"
        assert conda[conda_name][1:] == ("=", version), f"envs/clipeval.yaml: {conda[conda_name]} is not {version}"


def test_the_conda_environment_holds_every_runtime_dependency():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["cpu"]]
    conda = conda_dependencies()
    for dependency in wanted:
        name = requirement(dependency)[0]
        if name in PLANNING_ONLY:
            continue
        assert CONDA_NAME.get(name.replace("-", "_"), CONDA_NAME.get(name, name)).lower() in conda, name
