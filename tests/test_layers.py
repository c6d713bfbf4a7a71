"""The package's layers hold: no module imports one of a higher layer, no two packages import each other,
however indirectly (both read from the import graph that the code fingerprints use), and the benchmarks use
only the package's public names and leave the folder they run in as they found it."""

import ast

import pytest
from conftest import REPO

from clipeval.planning.codegraph import CodeGraph

PACKAGE_DIR = REPO / "workflow/clipeval"
# Lowest first: a module may import its own layer and those below it.
LAYERS = (
    ("errors", "threads", "devices", "metric_catalog", "tasks", "numerics", "ranking_rule"),
    ("storage",),
    ("data", "statistics", "published"),
    ("features",),
    ("models",),
    ("retrieval", "classification", "compositionality", "probe"),
    ("comparison", "tiers"),
    ("suites",),
    ("reporting",),
    ("experiments", "leaderboard", "pruning", "following"),
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


def top_part(module):
    """clipeval.PART of clipeval.PART[...]."""
    return ".".join(module.split(".")[:2])


def package_imports(package_dir):
    """{top part: the other top parts its modules import directly}."""
    graph = CodeGraph(package_dir)
    edges = {}
    for path in sorted(package_dir.rglob("*.py")):
        module = module_name(path, package_dir)
        if layer(module) is not None:
            imported = {top_part(name) for name in graph.direct_imports(module) if layer(name) is not None}
            edges.setdefault(top_part(module), set()).update(imported - {top_part(module)})
    return edges


def package_loops(edges):
    """Each pair of top parts that import each other, directly or through others: "A <-> B", sorted."""

    def reachable(start):
        seen, stack = set(), [start]
        while stack:
            for after in edges.get(stack.pop(), ()):
                if after not in seen:
                    seen.add(after)
                    stack.append(after)
        return seen

    reach = {part: reachable(part) for part in edges}
    return sorted(f"{a} <-> {b}" for a in reach for b in reach[a] if a < b and a in reach.get(b, ()))


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


def test_no_two_packages_import_each_other():
    assert package_loops(package_imports(PACKAGE_DIR)) == []


def test_a_loop_between_packages_is_found(tmp_path):
    package = tmp_path / "clipeval"
    for folder in ("retrieval", "probe", "classification"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "retrieval/a.py").write_text("from clipeval.probe import b\n")
    (package / "probe/b.py").write_text("from clipeval.classification import c\n")
    (package / "classification/c.py").write_text("def f():\n    from clipeval.retrieval import a\n")
    assert package_loops(package_imports(package)) == [
        "clipeval.classification <-> clipeval.probe",
        "clipeval.classification <-> clipeval.retrieval",
        "clipeval.probe <-> clipeval.retrieval",
    ]


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


def folder_changes(source):
    """The lines of `os.chdir(...)` calls, which leave the folder changed for whatever runs next."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "chdir"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "os"
    ]


@pytest.mark.parametrize("script", sorted((REPO / "benchmarks").glob("*.py")), ids=lambda path: path.name)
def test_benchmarks_change_folder_only_for_a_block(script):
    """`make bench` runs every script in one process: one that left its folder changed (a temporary one it
    then removed) broke the next. contextlib.chdir changes it back."""
    assert folder_changes(script.read_text()) == []


def test_a_folder_change_is_found():
    assert folder_changes("import os\nos.chdir('x')\nwith contextlib.chdir('y'):\n    pass\n") == [2]


def test_a_private_name_is_found():
    source = "from clipeval.retrieval import topk\nfrom clipeval.x import _y\nz = topk._GROUPS\nw = topk.top_k\n"
    assert private_names_used(source) == ["_y", "topk._GROUPS"]
