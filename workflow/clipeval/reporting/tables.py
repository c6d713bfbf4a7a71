"""The report's tables as HTML pages (pandas renders them): results with intervals, averages, provenance.

Each table gets a fixed id (pandas would draw a random one), so the same results give the same bytes.

The results table groups its columns by direction, one row per dataset and
model, the best value of each dataset in bold; intervals follow each value.
"""

import html
import json

import pandas as pd

from clipeval.published.check import difference_text, published_average, published_rows, tolerance_note
from clipeval.reporting.summary import SETTINGS, average_rows, breakdown_rows, rows_settings, suite_rows, summary_row
from clipeval.storage.jsonl import read_json
from clipeval.tasks import TASKS, Task


def columns_of(metrics) -> list[tuple]:
    """(group, label, column, higher is better) of each metric, as metric_table takes them."""
    return [(metric.group, metric.label, metric.column, metric.higher_is_better) for metric in metrics]


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 2em; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f2f2f2; text-align: center; }
td.config { text-align: left; white-space: pre-wrap; font-family: monospace; font-size: 12px; }
caption { caption-side: top; text-align: left; font-weight: bold; font-size: 16px; padding-bottom: 6px; }
.interval { color: #666; font-size: 12px; }
"""


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    if value is None:
        return "n/a"
    text = f"{value:.2f}"
    if row.get(f"{key}_ci_low") is not None:
        text += f' <span class="interval">[{row[key + "_ci_low"]:.2f}, {row[key + "_ci_high"]:.2f}]</span>'
    return text


def _best(rows: list[dict], key: str, higher: bool) -> set[int]:
    """Positions of the best value of each dataset (all of them on a tie), when a dataset has two models or more."""
    by_dataset = {}
    for i, row in enumerate(rows):
        if row.get(key) is not None:
            by_dataset.setdefault(row["dataset"], []).append((i, row[key]))
    best = set()
    for members in by_dataset.values():
        if len(members) > 1:
            target = (max if higher else min)(value for _, value in members)
            best |= {i for i, value in members if value == target}
    return best


def metric_table(name: str, rows: list[dict], columns, caption: str) -> str:
    """One task's rows as an HTML table: (dataset, model) rows, grouped metric columns, best in bold."""
    index = pd.MultiIndex.from_tuples([(row["dataset"], row["model"]) for row in rows], names=["dataset", "model"])
    header = pd.MultiIndex.from_tuples([(group, label) for group, label, _, _ in columns])
    cells = pd.DataFrame([[_cell(row, key) for _, _, key, _ in columns] for row in rows], index=index, columns=header)
    marks = [["" for _ in columns] for _ in rows]
    for position, (_, _, key, higher) in enumerate(columns):
        for row_index in _best(rows, key, higher):
            marks[row_index][position] = "font-weight: bold"
    bold = pd.DataFrame(marks, index=index, columns=header)
    styled = cells.style.apply(lambda _: bold, axis=None).set_caption(caption).set_uuid(name)
    # The cells are this module's own markup (numbers and their interval spans); the names are data.
    return styled.format_index(escape="html", axis=0).to_html()


def plain_table(name: str, records: list[dict], caption: str, index: list[str], left: tuple = ()) -> str:
    frame = pd.DataFrame(records).set_index(index)
    styled = (
        frame.style.set_caption(caption)
        .format(precision=2, na_rep="n/a", escape="html")
        .format_index(escape="html", axis=0)
        .set_uuid(name)
    )
    if left:
        styled = styled.set_td_classes(
            pd.DataFrame(
                [["config" if column in left else "" for column in frame.columns] for _ in range(len(frame))],
                index=frame.index,
                columns=frame.columns,
            )
        )
    return styled.to_html()


def page(title: str, sections: list[str]) -> str:
    body = "\n".join(sections)
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def task_tables(task: Task, results: list[tuple], rows: list[dict]) -> list[str]:
    """A task's table (the metrics its rows have), then each of its breakdowns' tables with each part a row;
    `results` (model, dataset, metrics) and `rows` (their summary rows) are the task's."""
    if not rows:
        return []
    metrics = task.table_metrics(rows_settings(rows, SETTINGS))
    shown = [column for column in columns_of(metrics) if any(column[2] in row for row in rows)]
    tables = [metric_table(task.name, rows, shown, task.table_title)]
    for breakdown in task.breakdowns:
        parts = [part for result in results for part in breakdown_rows(*result, breakdown.key, breakdown.label)]
        for part in parts:  # each part a table row of its own, as a dataset's
            name = part[breakdown.label]
            if not breakdown.whole or name != breakdown.whole:
                part["dataset"] = breakdown.part_name.format(dataset=part["dataset"], part=name)
        columns = shown if breakdown.metrics is None else columns_of(breakdown.metrics)
        tables.append(metric_table(f"{task.name}-{breakdown.key}", parts, columns, breakdown.title))
    return tables


def results_page(experiment: str, entries: list[tuple[str, str, str]], suite_paths=()) -> str:
    """entries: (model, dataset, metrics json path) in config order; suite_paths: score-suite outputs."""
    results = [(model, dataset, read_json(path)) for model, dataset, path in entries]
    rows = [summary_row(*result) for result in results]
    sections = [
        f"<h1>{html.escape(experiment)}: results</h1>",
        "<p>Percentages, 95% bootstrap intervals in brackets where computed; ranks are 1-based. "
        "Bold: the best model on a dataset.</p>",
    ]
    for task in TASKS.values():
        own = [index for index, row in enumerate(rows) if row["task"] == task.name]
        sections += task_tables(task, [results[i] for i in own], [rows[i] for i in own])
    averages = [
        {
            "model": a["model"],
            "task": a["task"],
            "metric": a["metric"].replace("_", " "),
            "datasets": a["datasets"],
            "average": a["average"],
        }
        for a in average_rows(rows)
    ]
    sections.append(
        plain_table("averages", averages, "Average over datasets (each task's headline metric)", ["model", "task"])
    )
    published_values = [row for result in results for row in published_rows(*result)]
    for index, path in enumerate(suite_paths):
        suite = read_json(path)
        averages, differences = suite_rows(suite)
        caption = f"Suite {suite['suite']}: mean of " + ", ".join(f"{d} ({m})" for d, m in suite["metrics"].items())
        cells = [_suite_cells(row) for row in averages]
        # Beside each average, the published one over the same datasets where the table has them all.
        known = {row["model"]: published_average(row["model"], suite["metrics"], published_values) for row in averages}
        if any(value is not None for value in known.values()):
            cells = [{**cell, "published": known[cell["model"]]} for cell in cells]
        sections.append(plain_table(f"suite-{index}", cells, caption, ["model"]))
        if differences:
            rows = [_suite_cells(row) for row in differences]
            sections.append(plain_table(f"suite-{index}-pairs", rows, "paired differences", ["first − second"]))
    published = [_published_cells(row) for row in published_values]
    if published:
        caption = "Published numbers beside the measured ones (⚠: beyond the tolerance)"
        sections.append(plain_table("published", published, caption, ["model", "dataset", "benchmark"]))
        sections.append(f"<p>{html.escape(tolerance_note())}</p>")
    return page(f"{experiment}: results", sections)


def _published_cells(row: dict) -> dict:
    cells = {key: row[key] for key in ("model", "dataset", "benchmark", "source", "metric", "measured", "published")}
    return {**cells, "difference": difference_text(row)}


def _suite_cells(row: dict) -> dict:
    """A suite row's name and its value with the interval, as text (the table shows them as given)."""
    name = "model" if "model" in row else "first − second"
    value = "n/a" if row["value"] is None else f"{row['value']:.2f}"
    if row["value_ci_low"] is not None:
        value += f" [{row['value_ci_low']:.2f}, {row['value_ci_high']:.2f}]"
    return {name: row[name], "average": value, "datasets": row["datasets"]}


def provenance_row(model: str, dataset: str, metrics: dict) -> dict:
    provenance = metrics.get("provenance") or {}
    model_meta = provenance.get("model") or {}
    dataset_meta = provenance.get("dataset") or {}
    versions = provenance.get("versions") or {}
    return {
        "model": model,
        "dataset": dataset,
        "weights sha256": model_meta.get("weights") or "(precomputed features)",
        "dataset checksum": dataset_meta.get("checksum", "n/a"),
        "libraries": "\n".join(f"{name} {version}" for name, version in sorted(versions.items())),
        "config": json.dumps(provenance.get("config"), indent=1, sort_keys=True),
    }


def provenance_page(experiment: str, entries: list[tuple[str, str, str]]) -> str:
    """For every number: the library versions, weights and data checksums, and the config that made it."""
    rows = [provenance_row(model, dataset, read_json(path)) for model, dataset, path in entries]
    sections = [
        f"<h1>{html.escape(experiment)}: provenance</h1>",
        "<p>What produced each (model, dataset) result, as recorded in its metrics file.</p>",
        plain_table(
            "provenance",
            rows,
            "Provenance of every result",
            ["model", "dataset"],
            left=("weights sha256", "dataset checksum", "libraries", "config"),
        ),
    ]
    return page(f"{experiment}: provenance", sections)
