"""The package's own import graph, read from the source: which code a command runs.

The workflow fingerprints each rule by the code its command runs (docs/CACHING.md,
"Caching and re-runs"). Imports are read with `ast`, so every form
counts: `import clipeval.x`, `from .x import a`, `from . import x`, imports in
parentheses or inside functions, and the package `__init__` files that any
import of a submodule runs; so do the imports by name that the registries
make (LISTING_PACKAGES, NAMED_BY_RECORDS). Standard library only: Snakemake loads this while
planning.
"""

import ast
import hashlib
import json
import os
from pathlib import Path

PACKAGE = "clipeval"
# Files a module reads at import time besides Python: the open_clip backend registers the
# shipped open_clip configs.
DATA_FILES = {"clipeval.models.open_clip_models": ("models/configs/*.json",)}
# Imports that no import statement shows. A listing package finds its modules by their files and imports them
# all (clipeval.tasks: every task's record); a module here imports by name the modules that a listing
# package's records name under a keyword (comparison.py: each task record's `pairing`).
LISTING_PACKAGES = ("clipeval.tasks",)
NAMED_BY_RECORDS = {"clipeval.comparison": ("clipeval.tasks", "pairing")}


class CodeGraph:
    """The import graph of the package's files as they are when first read.

    Each module's imports are parsed once per graph: Snakemake plans with one
    graph and fingerprints every command from it, and the files do not change
    while it plans.
    """

    def __init__(self, package_dir, cache_file=None):
        """`cache_file`: a JSON file of each module's imports as read from a file (by the sha256 of its path and
        content), kept between plans: parsing every module with ast is a third of a plan's own time. A changed
        or moved file is read anew; an unreadable cache is ignored."""
        self.package_dir = Path(package_dir)
        self._imports = {}
        self._files = {}
        self.cache_file = Path(cache_file) if cache_file else None
        self._cache = _read_cache(self.cache_file) if self.cache_file else {}
        self._cache_changed = False

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
        content = path.read_bytes()
        # The file's place is part of the key: `from . import x` in foo.py and in foo/__init__.py differ.
        key = hashlib.sha256(path.relative_to(self.package_dir).as_posix().encode() + b"\0" + content).hexdigest()
        cached = self._cache.get(module)
        if cached is not None and cached[0] == key:
            found = set(cached[1])
        else:
            found = self._named_imports(module, path, content)
            self._cache[module] = [key, sorted(found)]
            self._cache_changed = True
        if module in LISTING_PACKAGES:
            found |= self._listed_modules(module)
        if module in NAMED_BY_RECORDS:
            found |= self._named_by_records(*NAMED_BY_RECORDS[module])
        return {
            parent
            for name in found
            if self.source_file(name)
            for parent in _with_parents(name)
            if self.source_file(parent)
        }

    def _named_by_records(self, package: str, keyword: str) -> set[str]:
        """The strings that the records of `package` give as `keyword=` (each a module's name)."""
        names = set()
        for module in sorted(self._listed_modules(package)):
            tree = ast.parse(self.source_file(module).read_bytes(), filename=str(self.source_file(module)))
            names.update(
                node.value.value
                for node in ast.walk(tree)
                if isinstance(node, ast.keyword) and node.arg == keyword and isinstance(node.value, ast.Constant)
            )
        return names

    def _listed_modules(self, package: str) -> set[str]:
        folder = self.source_file(package).parent
        return {f"{package}.{path.stem}" for path in folder.glob("*.py") if not path.stem.startswith("_")}

    def _named_imports(self, module: str, path: Path, content: bytes) -> set[str]:
        """Every module name the source imports or may import, as written (resolved from relative forms)."""
        tree = ast.parse(content.decode("utf-8"), filename=str(path))
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
        return found

    def save_cache(self) -> None:
        """Write the cache if this graph read a module it did not hold, whole or not at all (a concurrent plan
        writes the same entries; a folder that refuses the write only loses the saving)."""
        if not self.cache_file or not self._cache_changed:
            return
        temporary = self.cache_file.with_name(f".{self.cache_file.name}.{os.getpid()}")
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(self._cache, sort_keys=True), encoding="utf-8")
            os.replace(temporary, self.cache_file)
            self._cache_changed = False
        except OSError:
            temporary.unlink(missing_ok=True)

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


def _read_cache(path: Path) -> dict:
    """{module: [sha256 of its content, [names it imports]]}, or {} where the file is missing or not that."""
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(cache, dict):
        return {}
    return {
        module: entry
        for module, entry in cache.items()
        if isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], list)
        and all(isinstance(name, str) for name in entry[1])
    }


def _with_parents(module: str) -> list[str]:
    """clipeval.commands.train -> [clipeval, clipeval.commands, clipeval.commands.train]."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


def command_entry_modules(command: str, source_format: str | None = None, model_backends=()) -> list[str]:
    """What `python -m clipeval COMMAND` starts from; `prepare FORMAT` loads its format's module by name, and a
    command that builds a model the module of the model's backend, which models/build.py imports by name."""
    modules = [f"{PACKAGE}.__main__", f"{PACKAGE}.commands.{command.replace('-', '_')}"]
    if source_format:
        modules.append(f"{PACKAGE}.data.sources.{source_format}")
    return modules + [f"{PACKAGE}.models.{backend}" for backend in sorted(set(model_backends))]
