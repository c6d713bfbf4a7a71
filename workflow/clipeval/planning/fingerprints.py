"""Each rule's `code` param: a digest of the code its command runs and of its libraries' installed versions.

Shell rules notice neither when the Python they call changes; a changed
fingerprint re-runs the rule's jobs (docs/CACHING.md).
"""

import functools
import hashlib
from importlib import metadata

from clipeval.cli import command_module
from clipeval.codegraph import CodeGraph, command_entry_modules


@functools.cache  # installed versions do not change while Snakemake plans
def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def code_fingerprint(graph: CodeGraph, command: str, source_format: str | None = None) -> str:
    """A digest of the code `python -m clipeval COMMAND [FORMAT]` runs and its libraries' versions."""
    digest = hashlib.sha256(graph.digest(command_entry_modules(command, source_format)).encode())
    # With the command's own modules, the installed versions of the libraries
    # that shape its output (its module's LIBRARIES).
    for library in command_module(command).LIBRARIES:
        digest.update(f"{library}=={installed_version(library)}\n".encode())
    return digest.hexdigest()[:16]
