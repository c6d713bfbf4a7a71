"""The package's own import graph, read from the source: which code a command runs.

The workflow fingerprints each rule by the code its command runs (docs/CACHING.md,
"Caching and re-runs"). Imports are read with `ast`, so every form
counts: `import clipeval.x`, `from .x import a`, `from . import x`, imports in
parentheses or inside functions, and the package `__init__` files that any
import of a submodule runs. Standard library only: Snakemake loads this while
planning.
"""

import ast
import hashlib
from pathlib import Path

PACKAGE = "clipeval"
# Files a module reads at import time besides Python: models/build.py registers the
# shipped open_clip configs.
DATA_FILES = {"clipeval.models.build": ("models/configs/*.json",)}


class CodeGraph:
    """The import graph of the package's files as they are when first read.

    Each module's imports are parsed once per graph: Snakemake plans with one
    graph and fingerprints every command from it, and the files do not change
    while it plans.
    """

    def __init__(self, package_dir):
        self.package_dir = Path(package_dir)
        self._imports = {}
        self._files = {}

    def source_file(self, module: str) -> Path | None:
        """The file that defines `module`, or None if it is not part of the package."""
        if module not in self._files:
            self._files[module] = self._find_source_file(module)
        return self._files[module]

    def _find_source_file(self, module: str) -> Path | None:
        parts = module.split(".")
        if parts[0] != PACKAGE:
            return None
        base = self.package_dir.joinpath(*parts[1:])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def _is_package(self, module: str) -> bool:
        path = self.source_file(module)
        return path is not None and path.name == "__init__.py"

    def direct_imports(self, module: str) -> set[str]:
        """Package modules that `module` imports anywhere in its source, with their parent packages."""
        if module not in self._imports:
            self._imports[module] = self._parse_imports(module)
        return self._imports[module]

    def _parse_imports(self, module: str) -> set[str]:
        path = self.source_file(module)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = module if self._is_package(module) else module.rpartition(".")[0]
        found = set()
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    base = node.module
                found.add(base)
                # `from package import name` may name a submodule.
                found.update(f"{base}.{alias.name}" for alias in node.names)
        return {
            parent
            for name in found
            if self.source_file(name)
            for parent in _with_parents(name)
            if self.source_file(parent)
        }

    def closure(self, entry_modules) -> list[str]:
        """The entry modules and every package module they import, transitively, sorted."""
        seen, pending = set(), [parent for entry in entry_modules for parent in _with_parents(entry)]
        while pending:
            module = pending.pop()
            if module in seen or self.source_file(module) is None:
                continue
            seen.add(module)
            pending.extend(self.direct_imports(module) - seen)
        return sorted(seen)

    def files_of(self, modules) -> list[Path]:
        files = []
        for module in modules:
            files.append(self.source_file(module))
            for pattern in DATA_FILES.get(module, ()):
                files.extend(sorted(self.package_dir.glob(pattern)))
        return files

    def digest(self, entry_modules) -> str:
        """sha256 over the path and content of every file the entry modules run."""
        total = hashlib.sha256()
        for path in self.files_of(self.closure(entry_modules)):
            total.update(path.relative_to(self.package_dir).as_posix().encode() + b"\0")
            total.update(path.read_bytes() + b"\0")
        return total.hexdigest()


# Fields that hold nested statements (an except clause's or a match case's body included). Imports are
# statements, so the expressions around them need no visit: most of a module's nodes.
_STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body):
    """Every statement in `body`, at any depth of nesting."""
    for node in body:
        yield node
        for field in _STATEMENT_FIELDS:
            nested = getattr(node, field, None)
            if isinstance(nested, list):
                yield from _statements(nested)


def _with_parents(module: str) -> list[str]:
    """clipeval.commands.train -> [clipeval, clipeval.commands, clipeval.commands.train]."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


def command_entry_modules(command: str, source_format: str | None = None, model_backends=()) -> list[str]:
    """What `python -m clipeval COMMAND` starts from; `prepare FORMAT` loads its format's module by name, and a
    command that builds a model not of open_clip its backend's (models/build.py)."""
    modules = [f"{PACKAGE}.__main__", f"{PACKAGE}.commands.{command.replace('-', '_')}"]
    if source_format:
        modules.append(f"{PACKAGE}.data.sources.{source_format}")
    return modules + [f"{PACKAGE}.models.{backend}" for backend in sorted(set(model_backends))]
