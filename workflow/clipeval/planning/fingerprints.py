"""Each rule's `code` param: a digest of the code its command runs and of its libraries' installed versions.

Shell rules notice neither when the Python they call changes; a changed
fingerprint re-runs the rule's jobs (docs/CACHING.md).
"""

import functools
import hashlib
from importlib import metadata

from clipeval.cli import command_module
from clipeval.models.pretrained import BACKENDS
from clipeval.planning.codegraph import CodeGraph, command_entry_modules


@functools.cache  # installed versions do not change while Snakemake plans
def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def code_fingerprint(graph: CodeGraph, command: str, source_format: str | None = None, model_backends=()) -> str:
    """A digest of the code `python -m clipeval COMMAND [FORMAT]` runs, for models of these backends, and its
    libraries' versions."""
    modules = command_entry_modules(command, source_format, model_backends)
    digest = hashlib.sha256(graph.digest(modules).encode())
    # With the command's own modules, the installed versions of the libraries
    # that shape its output (its module's LIBRARIES, and its model backends').
    libraries = [*command_module(command).LIBRARIES]
    libraries += [library for backend in sorted(set(model_backends)) for library in BACKENDS[backend].libraries]
    for library in libraries:
        digest.update(f"{library}=={installed_version(library)}\n".encode())
    return digest.hexdigest()[:16]
