"""Long argument lists of jobs, in files: a sweep's summary, tables, plots and comparisons take a word per
model and dataset, and a shell command longer than the system's limit for one argument (128 KiB on Linux;
Snakemake hands a job's whole command to `bash -c`) fails with "Argument list too long".

Each list is written at planning to a file named by the digest of its content, so a job's param (the file's
path) changes exactly when its list does, and the file a job reads is the one its plan wrote. The job's
command reads it back with `clipeval … --arguments-file FILE` (cli.expand_argument_files).
"""

import hashlib
import json
from pathlib import Path

from clipeval.storage.atomic import atomic_output

ARGUMENTS_DIR = Path(".snakemake/clipeval-arguments")


def argument_file(words: list[str], directory: Path = ARGUMENTS_DIR) -> str:
    text = json.dumps(words)
    path = directory / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.is_file() or path.read_text() != text:
        with atomic_output(path) as temporary:
            Path(temporary).write_text(text)
    return str(path)
