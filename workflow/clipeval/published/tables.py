"""The shipped tables (data/, with their sources in data/SOURCES.md) read into one list of published values:
which model (open_clip's arch and pretrained tag), which benchmark, which metric, what value, from where."""

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from clipeval.published.benchmarks import BENCHMARKS

DATA = Path(__file__).parent / "data"
OPENCLIP_RESULTS = "openclip_results.csv"
OPENCLIP_RETRIEVAL = "openclip_retrieval_results.csv"
CLIP_BENCHMARK = "clip_benchmark.csv"
# How each table is named where a value is shown.
SOURCE_NAMES = {
    OPENCLIP_RESULTS: "open_clip results",
    OPENCLIP_RETRIEVAL: "open_clip retrieval results",
    CLIP_BENCHMARK: "CLIP_benchmark",
}
# CLIP_benchmark's columns, as clipeval's metrics.
CLIP_BENCHMARK_METRICS = {
    "acc1": "top1",
    "acc5": "top5",
    "mean_per_class_recall": "mean_per_class_recall",
    "mean_average_precision": "mean_average_precision",
    "image_retrieval_recall@5": "t2i_R@5",
    "text_retrieval_recall@5": "i2t_R@5",
}
RETRIEVAL_DIRECTIONS = {"image retr.": "t2i", "text retr.": "i2t"}


@dataclass(frozen=True)
class PublishedValue:
    arch: str
    pretrained: str
    benchmark: str
    metric: str  # a summary column (top1, t2i_R@5) or benchmarks.MEAN_R1
    value: float  # percent
    source: str  # the table's file name under data/


def _rows(folder: Path, name: str) -> list[dict]:
    with open(folder / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _percent(text: str) -> float | None:
    return 100.0 * float(text) if text.strip() else None


def read_values(folder: Path = DATA) -> list[PublishedValue]:
    """Every value of the three tables in `folder` that names a benchmark of BENCHMARKS and a metric clipeval
    computes."""
    return [*_openclip_values(folder), *_openclip_retrieval_values(folder), *_clip_benchmark_values(folder)]


def _openclip_values(folder: Path):
    by_column = {b.openclip_column: name for name, b in BENCHMARKS.items() if b.openclip_column}
    for row in _rows(folder, OPENCLIP_RESULTS):
        for column, benchmark in by_column.items():
            value = _percent(row.get(column) or "")
            if value is not None:
                metric = BENCHMARKS[benchmark].openclip_metric
                yield PublishedValue(row["name"], row["pretrained"], benchmark, metric, value, OPENCLIP_RESULTS)


def _openclip_retrieval_values(folder: Path):
    prefixes = {b.openclip_retrieval: name for name, b in BENCHMARKS.items() if b.openclip_retrieval}
    for row in _rows(folder, OPENCLIP_RETRIEVAL):
        for prefix, benchmark in prefixes.items():
            for label, direction in RETRIEVAL_DIRECTIONS.items():
                for k in (1, 5, 10):
                    value = _percent(row.get(f"{prefix} {label} R@{k}") or "")
                    if value is not None:
                        model, metric = (row["name"], row["pretrained"]), f"{direction}_R@{k}"
                        yield PublishedValue(*model, benchmark, metric, value, OPENCLIP_RETRIEVAL)


def _clip_benchmark_values(folder: Path):
    by_name = {name: benchmark for benchmark, b in BENCHMARKS.items() for name in b.clip_benchmark_names}
    for row in _rows(folder, CLIP_BENCHMARK):
        benchmark = by_name.get(row["dataset"])
        for column, metric in CLIP_BENCHMARK_METRICS.items():
            value = _percent(row.get(column) or "")
            if benchmark and value is not None:
                yield PublishedValue(row["model"], row["pretrained"], benchmark, metric, value, CLIP_BENCHMARK)


@functools.cache
def shipped_index() -> dict:
    return index(read_values())


def index(values) -> dict:
    """{(arch, pretrained, benchmark): [published values]}"""
    found = {}
    for value in values:
        found.setdefault((value.arch, value.pretrained, value.benchmark), []).append(value)
    return found
