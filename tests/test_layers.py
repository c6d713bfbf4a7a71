"""The package's layers hold: no module imports one of a higher layer (read from the import graph that the
code fingerprints use), and the benchmarks use only the package's public names."""

import ast

import pytest
from conftest import REPO

from clipeval.codegraph import CodeGraph

PACKAGE_DIR = REPO / "workflow/clipeval"
# Lowest first: a module may import its own layer and those below it.
LAYERS = (
    ("errors", "threads", "devices", "metric_catalog"),
    ("storage",),
    ("data", "statistics"),
    ("models", "features"),
    ("retrieval", "classification", "compositionality", "probe"),
    ("comparison",),
    ("suites",),
    ("reporting",),
    ("experiments", "leaderboard", "pruning", "config_errors", "codegraph"),
    ("commands", "cli", "__main__"),
    ("warm_jobs",),
    ("planning",),
)
LAYER_OF = {name: index for index, names in enumerate(LAYERS) for name in names}


def module_name(path, package_dir=PACKAGE_DIR):
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module):
    """The layer of clipeval.PART[...]; None for the package itself."""
    parts = module.split(".")
    return LAYER_OF[parts[1]] if len(parts) > 1 else None


def upward_imports(package_dir):
    graph = CodeGraph(package_dir)
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        module = module_name(path, package_dir)
        if layer(module) is None:
            continue
        for imported in sorted(graph.direct_imports(module)):
            if layer(imported) is not None and layer(imported) > layer(module):
                found.append(f"{module} imports {imported}")
    return found


def test_every_module_has_a_layer():
    tops = {path.relative_to(PACKAGE_DIR).parts[0].removesuffix(".py") for path in PACKAGE_DIR.rglob("*.py")}
    assert tops - {"__init__"} <= set(LAYER_OF), sorted(tops - {"__init__"} - set(LAYER_OF))


def test_no_module_imports_a_higher_layer():
    assert upward_imports(PACKAGE_DIR) == []


def test_an_upward_import_is_found(tmp_path):
    package = tmp_path / "clipeval"
    (package / "storage").mkdir(parents=True)
    (package / "reporting").mkdir()
    for name in ("__init__.py", "storage/__init__.py", "reporting/__init__.py", "reporting/tables.py"):
        (package / name).write_text("")
    (package / "storage/jsonl.py").write_text("def f():\n    from ..reporting import tables\n")
    assert upward_imports(package) == [
        "clipeval.storage.jsonl imports clipeval.reporting",
        "clipeval.storage.jsonl imports clipeval.reporting.tables",
    ]


def private_names_used(source):
    """Names starting with _ taken from clipeval: imported from it, or read off a module imported from it."""
    tree = ast.parse(source)
    modules, used = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("clipeval"):
            used += [alias.name for alias in node.names if alias.name.startswith("_")]
            modules |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name for alias in node.names if alias.name.startswith("clipeval")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            if node.attr.startswith("_"):
                used.append(f"{node.value.id}.{node.attr}")
    return used


@pytest.mark.parametrize("script", sorted((REPO / "benchmarks").glob("*.py")), ids=lambda path: path.name)
def test_benchmarks_use_public_names_only(script):
    assert private_names_used(script.read_text()) == []


def test_a_private_name_is_found():
    source = "from clipeval.retrieval import topk\nfrom clipeval.x import _y\nz = topk._GROUPS\nw = topk.top_k\n"
    assert private_names_used(source) == ["_y", "topk._GROUPS"]
