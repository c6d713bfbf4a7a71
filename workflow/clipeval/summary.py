"""One row per (model, dataset): every metric a column, in a stable order."""

import csv
import io
from pathlib import Path

from .atomic import atomic_output
from .jsonl import read_json

METRIC_COLUMNS = (
    "t2i_R@1", "t2i_R@5", "t2i_R@10",
    "i2t_R@1", "i2t_R@5", "i2t_R@10",
    "rsum", "mean_recall",
    "top1", "top5", "mean_per_class_recall",
    "images", "texts", "classes",
)


def retrieval_row(metrics: dict) -> dict:
    row = {}
    for direction in ("t2i", "i2t"):
        for name, value in metrics[direction].items():
            row[f"{direction}_{name}"] = value
    row["rsum"] = metrics["rsum"]
    row["mean_recall"] = metrics["mean_recall"]
    row["texts"] = metrics["counts"]["texts"]
    return row


def classification_row(metrics: dict) -> dict:
    row = {name: metrics[name] for name in ("top1", "top5", "mean_per_class_recall")}
    row["classes"] = metrics["counts"]["classes"]
    return row


def summary_row(model: str, dataset: str, metrics: dict) -> dict:
    task = metrics.get("task", "retrieval")
    specific = retrieval_row(metrics) if task == "retrieval" else classification_row(metrics)
    return {"model": model, "dataset": dataset, "task": task, "images": metrics["counts"]["images"], **specific}


def columns_for(rows: list[dict]) -> list[str]:
    """Fixed leading columns, then any extra R@K columns in numeric order."""
    fixed = ["model", "dataset", "task", *METRIC_COLUMNS]
    extra = sorted({key for row in rows for key in row} - set(fixed), key=_column_sort_key)
    return fixed + extra


def _column_sort_key(name: str):
    direction, _, metric = name.partition("_R@")
    return (direction, int(metric) if metric.isdigit() else 0, name)


def _formatted(row: dict, column: str) -> str:
    """Blank where a metric does not apply to the row's task; n/a where it is undefined."""
    if column not in row:
        return ""
    value = row[column]
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def render_csv(rows: list[dict], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: (round(value, 4) if isinstance(value, float) else value) for key, value in row.items()})
    return buffer.getvalue()


def render_markdown(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_formatted(row, column) for column in columns) + " |")
    return "\n".join(lines) + "\n"


def summarize(entries: list[tuple[str, str, str]], csv_path, markdown_path) -> list[dict]:
    """entries: (model, dataset, metrics json path), in the order rows should appear."""
    rows = [summary_row(model, dataset, read_json(path)) for model, dataset, path in entries]
    columns = columns_for(rows)
    for path, text in ((csv_path, render_csv(rows, columns)), (markdown_path, render_markdown(rows, columns))):
        with atomic_output(path) as temporary:
            Path(temporary).write_text(text, encoding="utf-8")
    return rows
