"""The model backends' contract (models/build.py): an arch parsed once into its scheme and backend, each backend
module with the same four functions, and build.py naming none of them. A backend is added here the way
test_source_formats adds a format: one module and one entry."""

import ast
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from clipeval.models import build, pretrained
from clipeval.models.model_check import model_problem
from clipeval.models.pretrained import BACKENDS, SCHEMES, Backend, Scheme, parse_model_name
from clipeval.planning import fingerprints
from clipeval.planning.codegraph import CodeGraph

REPO = Path(__file__).resolve().parents[1]
CONTRACT = {
    "check_name": ["name"],
    "check_weights": ["name", "pretrained"],
    "checkpoint_misfit": ["name", "checkpoint"],
    "load": ["name", "pretrained", "device", "precision", "preprocess"],
}


@pytest.mark.parametrize(
    ("arch", "module", "identifier", "folder"),
    [
        ("ViT-B-32", "open_clip_models", "ViT-B-32", None),
        ("local-dir:runs/m", "open_clip_models", "runs/m", Path("runs/m")),
        ("hf-hub:org/never-cached", "open_clip_models", "org/never-cached", None),
        ("hf-transformers:folders/siglip", "transformers_models", "folders/siglip", Path("folders/siglip")),
        ("cn-clip:ViT-B-16", "cnclip_models", "ViT-B-16", None),
    ],
)
def test_an_arch_is_parsed_into_its_backend_and_what_it_names(arch, module, identifier, folder):
    name = parse_model_name(arch)
    assert (name.arch, name.backend.module, name.identifier, name.folder) == (arch, module, identifier, folder)


def test_every_backend_module_keeps_the_contract_and_build_names_none():
    for module in BACKENDS:
        backend = build.backend_of(parse_model_name(next(s for s in SCHEMES if s.backend.module == module).prefix))
        for function, parameters in CONTRACT.items():
            assert list(inspect.signature(getattr(backend, function)).parameters) == parameters, (module, function)
    source = Path(build.__file__).read_text()
    assert [word for word in [*BACKENDS, *(scheme.prefix for scheme in SCHEMES)] if word in source] == []
    imports = {
        alias.name.split(".")[0] if isinstance(node, ast.Import) else node.module.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert imports & {"open_clip", "transformers", "cn_clip"} == set()
    # Nor does it reach one through another module, which would put it in every model's fingerprint.
    imported = CodeGraph(REPO / "workflow/clipeval").closure(["clipeval.models.build"])
    assert [module for module in imported if module.rsplit(".", 1)[-1] in BACKENDS] == []
    # A folder scheme's folder is checked for its marker before anything runs (planning/checks.py).
    assert all(scheme.marker for scheme in SCHEMES if scheme.folder == "path")


class Toy:
    """A stand-in model: what `load` returns, recognisable."""


def toy_backend():
    module = types.ModuleType("clipeval.models.toy_models")

    def check_name(name):
        if name.identifier != "known":
            raise build.ClipevalError(f"unknown toy {name.identifier!r}")

    def check_weights(name, pretrained):
        if pretrained != "toy.pt":
            raise build.ClipevalError(f"toys take toy.pt, not {pretrained!r}")

    def checkpoint_misfit(name, checkpoint):
        return "one tensor too many"

    def load(name, pretrained, device, precision, preprocess):
        return Toy(), (name.identifier, device, precision, preprocess), "tokenizer"

    module.__dict__.update(
        check_name=check_name, check_weights=check_weights, checkpoint_misfit=checkpoint_misfit, load=load
    )
    return module


def test_a_backend_added_as_a_module_and_a_scheme_is_built_and_checked(monkeypatch):
    toy = Backend("toy_models", ("toylib",), trainable=False, open_clip_preprocessing=False)
    monkeypatch.setitem(BACKENDS, "toy_models", toy)
    monkeypatch.setattr(pretrained, "SCHEMES", (*SCHEMES, Scheme("toy:", toy)))
    monkeypatch.setitem(sys.modules, "clipeval.models.toy_models", toy_backend())
    model, transform, tokenizer = build.build_model("toy:known", "toy.pt", precision="amp", preprocess={"mean": 1})
    assert isinstance(model, Toy) and transform == ("known", "cpu", "amp", {"mean": 1}) and tokenizer == "tokenizer"
    assert model_problem("m", "toy:other", "toy.pt", "fp32", "extract.precision", None) == (
        "models.m.arch: unknown toy 'other'"
    )
    assert model_problem("m", "toy:known", "", "fp32", "extract.precision", None) == (
        "models.m.pretrained: toys take toy.pt, not ''"
    )
    assert model_problem("m", "toy:known", "toy.pt", "fp32", "extract.precision", None) == (
        "models.m.pretrained: toy.pt: weights do not fit arch 'toy:known': one tensor too many"
    )
    # The backend's libraries join its models' code fingerprints.
    graph = CodeGraph(REPO / "workflow/clipeval")
    monkeypatch.setattr(fingerprints, "installed_version", lambda library: "1")
    before = fingerprints.code_fingerprint(graph, "extract-features", model_backends=["toy_models"])
    monkeypatch.setattr(fingerprints, "installed_version", lambda library: "2" if library == "toylib" else "1")
    assert fingerprints.code_fingerprint(graph, "extract-features", model_backends=["toy_models"]) != before


@pytest.mark.slow
def test_the_import_config_readme_names_registers_the_demo_model_in_a_new_interpreter():
    readme = (REPO / "config/README.md").read_text(encoding="utf-8")
    (module,) = re.findall(r"after `import ([\w.]+)`, which registers the config", readme)
    script = f"import open_clip, {module}; open_clip.create_model('clipeval-tiny')"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
