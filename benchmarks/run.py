"""`make bench`: every benchmark, one table each, after the machine they ran on.

The tables go to the terminal as they come and, once every script has
finished, to docs/BENCHMARKS.md (written whole, so an interrupted run leaves
the page as it was).
"""

import io
import os
import sys
from pathlib import Path

import decoding
import extraction
import feature_io
import knn
import knn_settings
import numerics_cost
import peer
import planning
import scoring
import shared_machine
import sweep
from measure import machine

PAGE = Path(__file__).resolve().parents[1] / "docs" / "BENCHMARKS.md"
HEADER = """# Benchmarks

Written by `make bench` (`benchmarks/run.py`), which runs every script in
`benchmarks/` and prints each stage's time as a ratio to a floor measured in
the same run: Snakemake's own start for planning, the float32 matrix product of the same shape for knn and
scoring, the raw orjson parse for feature files, the model's forward pass for
extraction, the native code path for the portable profile's pins, and
CLIP_benchmark (installed from the package index for the run) on the same
work for the first run and re-runs. Each script also runs alone (`.venv/bin/python benchmarks/knn.py
--help`).

"""


class Tee(io.TextIOBase):
    """Writes to the terminal and keeps a copy."""

    def __init__(self, terminal):
        self.terminal, self.copy = terminal, io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.terminal.write(text)

    def flush(self):
        self.terminal.flush()


# Tables recorded where `make bench` cannot run them (a lent GPU, a caption set that does not ship), each with
# its command and what it ran on.
RECORDED = Path(__file__).resolve().parent / "recorded"


def write_page(tables: str) -> None:
    recorded = "".join(f"\n{path.read_text(encoding='utf-8')}" for path in sorted(RECORDED.glob("*.md")))
    temporary = PAGE.with_name(f".{PAGE.name}.tmp")
    temporary.write_text(HEADER + tables.lstrip() + recorded, encoding="utf-8")
    os.replace(temporary, PAGE)


if __name__ == "__main__":
    tee = sys.stdout = Tee(sys.stdout)
    print(f"Machine: {machine()}")
    extraction.main([])  # first: it pins torch's numerics, which must happen before anything imports torch
    decoding.main([])
    planning.main([])
    knn.main([])
    knn_settings.main([])
    feature_io.main([])
    scoring.main([])
    sweep.main([])
    shared_machine.main([])
    numerics_cost.main([])
    peer.main(["--images", "64"])  # a small set: where each job's start weighs most
    peer.main([])
    sys.stdout = tee.terminal
    write_page(tee.copy.getvalue())
