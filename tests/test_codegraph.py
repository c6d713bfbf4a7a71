"""The import graph behind the code fingerprints, on a package written for the test."""

import textwrap

from clipeval.planning.codegraph import CodeGraph, command_entry_modules

FILES = {
    "__init__.py": "",
    "__main__.py": "from .cli import main\n",
    "cli.py": "from . import commands\nfrom .errors import Oops\n",
    "errors.py": "class Oops(Exception):\n    pass\n",
    "commands/__init__.py": "",
    "commands/alpha.py": """
        from ._shared import option

        def run():
            from ..deep import (
                one,
                two,
            )
            import clipeval.absolute
        """,
    "commands/_shared.py": "import os\nfrom .. import sibling\n",
    "commands/beta.py": "from clipeval.models import tower\n",
    "deep.py": "from .leaf import x\none = two = 1\n",
    "leaf.py": "import numpy\nx = 1\n",
    "absolute.py": "",
    "sibling.py": "",
    "unused.py": "from .leaf import x\n",
    "models/__init__.py": "",
    "models/tower.py": "from ..errors import Oops\n",
}


def write_package(root):
    package = root / "clipeval"
    for name, text in FILES.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return package


def test_every_import_form_is_followed(tmp_path):
    graph = CodeGraph(write_package(tmp_path))
    assert graph.closure(command_entry_modules("alpha")) == [
        "clipeval",
        "clipeval.__main__",
        "clipeval.absolute",
        "clipeval.cli",
        "clipeval.commands",
        "clipeval.commands._shared",
        "clipeval.commands.alpha",
        "clipeval.deep",
        "clipeval.errors",
        "clipeval.leaf",
        "clipeval.sibling",
    ]
    assert graph.closure(command_entry_modules("beta")) == [
        "clipeval",
        "clipeval.__main__",
        "clipeval.cli",
        "clipeval.commands",
        "clipeval.commands.beta",
        "clipeval.errors",
        "clipeval.models",
        "clipeval.models.tower",
    ]


def test_the_digest_changes_with_exactly_the_code_a_command_runs(tmp_path):
    package = write_package(tmp_path)
    graph = CodeGraph(package)
    before = {command: graph.digest(command_entry_modules(command)) for command in ("alpha", "beta")}

    def changed_after(edit):
        edit()
        after = {command: graph.digest(command_entry_modules(command)) for command in before}
        changed = {command for command in before if after[command] != before[command]}
        before.update(after)
        return changed

    assert changed_after(lambda: (package / "leaf.py").write_text("import numpy\nx = 2\n")) == {"alpha"}
    assert changed_after(lambda: (package / "models/tower.py").write_text("# edited\n")) == {"beta"}
    assert changed_after(lambda: (package / "unused.py").write_text("# edited\n")) == set()
    assert changed_after(lambda: (package / "commands/gamma.py").write_text("x = 1\n")) == set()
    assert changed_after(lambda: (package / "errors.py").write_text("class Oops(Exception):\n    '''x'''\n")) == {
        "alpha",
        "beta",
    }


def test_the_imports_kept_between_plans_are_those_of_each_files_content(tmp_path):
    """A graph that reads its modules' imports from the cache gives the closures and digests of one that
    parses them, a module whose content changed is parsed again, and a cache that is not one is ignored."""
    package = write_package(tmp_path)
    cache = tmp_path / "cache/import-graph.json"
    entries = [command_entry_modules(command) for command in ("alpha", "beta")]
    parsed = CodeGraph(package)
    first = CodeGraph(package, cache_file=cache)
    assert [first.closure(entry) for entry in entries] == [parsed.closure(entry) for entry in entries]
    first.save_cache()
    assert cache.is_file()
    cached = CodeGraph(package, cache_file=cache)
    assert [(cached.closure(entry), cached.digest(entry)) for entry in entries] == [
        (parsed.closure(entry), parsed.digest(entry)) for entry in entries
    ]
    assert not cached._cache_changed  # every module's imports came from the cache

    (package / "commands/beta.py").write_text("from clipeval.models import tower\nfrom clipeval import unused\n")
    changed = CodeGraph(package, cache_file=cache)
    assert "clipeval.unused" in changed.closure(command_entry_modules("beta"))
    assert changed.closure(command_entry_modules("beta")) == CodeGraph(package).closure(command_entry_modules("beta"))

    # The same text moved from a module into its own package's __init__.py imports from that package.
    (package / "deep.py").unlink()
    (package / "deep").mkdir()
    (package / "deep/__init__.py").write_text("from .leaf import x\none = two = 1\n")
    (package / "deep/leaf.py").write_text("x = 1\n")
    moved = CodeGraph(package, cache_file=cache)
    assert "clipeval.deep.leaf" in moved.closure(command_entry_modules("alpha"))
    assert moved.closure(command_entry_modules("alpha")) == CodeGraph(package).closure(command_entry_modules("alpha"))

    for broken in ("not json", '{"clipeval.cli": "x"}', "[1, 2]"):
        cache.write_text(broken)
        assert CodeGraph(package, cache_file=cache).closure(entries[0]) == CodeGraph(package).closure(entries[0])
