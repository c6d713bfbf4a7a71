"""The summary: one row per (model, dataset), per-model averages, paired comparisons.

summary.csv holds every metric as a column, in a stable order, with
`_ci_low`/`_ci_high` columns where the metric has a bootstrap interval;
averages.csv and comparisons.csv hold the other two tables; summary.md shows
all three, intervals in brackets.
"""

import csv
import io
from pathlib import Path

from clipeval.storage.atomic import atomic_output
from clipeval.storage.jsonl import read_json

METRIC_COLUMNS = (
    "t2i_R@1",
    "t2i_R@5",
    "t2i_R@10",
    "i2t_R@1",
    "i2t_R@5",
    "i2t_R@10",
    "rsum",
    "mean_recall",
    "t2i_mean_recall",
    "i2t_mean_recall",
    "t2i_mean_rank",
    "t2i_median_rank",
    "i2t_mean_rank",
    "i2t_median_rank",
    "top1",
    "top5",
    "mean_per_class_recall",
)
COUNT_COLUMNS = ("protocol", "images", "texts", "classes")
INTERVAL_BOUNDS = ("_ci_low", "_ci_high")
# Each task's headline metric, averaged over datasets as OpenCLIP reports its
# "average over N datasets".
MAIN_METRIC = {"retrieval": "mean_recall", "classification": "top1"}
COMPARED_IN_MARKDOWN = {
    "retrieval": ("t2i_R@1", "i2t_R@1", "rsum", "mean_recall"),
    "classification": ("top1", "top5", "mean_per_class_recall"),
}


def metric_values(metrics: dict, task: str) -> dict:
    """{"t2i_R@1": 17.7, "rsum": ..., "top1": ...}: a metrics file's numbers (or intervals) under column names."""
    if task == "retrieval":
        values = {f"{d}_{name}": value for d in ("t2i", "i2t") for name, value in metrics[d].items()}
        values.update(rsum=metrics["rsum"], mean_recall=metrics["mean_recall"])
        return values
    return {name: metrics[name] for name in ("top1", "top5", "mean_per_class_recall")}


def summary_row(model: str, dataset: str, metrics: dict) -> dict:
    task = metrics.get("task", "retrieval")
    row = {"model": model, "dataset": dataset, "task": task, **metric_values(metrics, task)}
    if metrics.get("intervals"):
        for column, interval in metric_values(metrics["intervals"], task).items():
            row[f"{column}_ci_low"], row[f"{column}_ci_high"] = interval if interval else (None, None)
    counts = metrics["counts"]
    row["images"] = counts["images"]
    if task == "retrieval":
        row.update(protocol=metrics.get("protocol", "full"), texts=counts["texts"])
    else:
        row["classes"] = counts["classes"]
    return row


def _column_sort_key(name: str):
    direction, _, metric = name.partition("_R@")
    return (direction, int(metric) if metric.isdigit() else 0, name)


def columns_for(rows: list[dict]) -> list[str]:
    """Fixed leading columns, extra R@K columns in numeric order, then the interval bounds."""
    fixed = ["model", "dataset", "task", *METRIC_COLUMNS]
    present = {key for row in rows for key in row}
    bounds = INTERVAL_BOUNDS
    extra = sorted(
        present - set(fixed) - set(COUNT_COLUMNS) - {k for k in present if k.endswith(bounds)}, key=_column_sort_key
    )
    metric_columns = [*METRIC_COLUMNS, *extra]
    interval_columns = [c + bound for c in metric_columns for bound in bounds if c + bound in present]
    return [*fixed, *extra, *COUNT_COLUMNS, *interval_columns]


def _number(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _cell(row: dict, column: str) -> str:
    """Blank where a metric does not apply to the row's task; n/a where it is undefined."""
    if column not in row:
        return ""
    text = _number(row[column])
    if row.get(f"{column}_ci_low") is not None:
        text += f" [{_number(row[column + '_ci_low'])}, {_number(row[column + '_ci_high'])}]"
    return text


def render_csv(rows: list[dict], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: (round(value, 4) if isinstance(value, float) else value) for key, value in row.items()})
    return buffer.getvalue()


def markdown_table(rows: list[dict], columns: list[str]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row, column) for column in columns) + " |" for row in rows]
    return lines


def average_rows(rows: list[dict]) -> list[dict]:
    """Per model and task, the unweighted mean of the task's main metric over its datasets."""
    groups = {}
    for row in rows:
        groups.setdefault((row["model"], row["task"]), []).append(row[MAIN_METRIC[row["task"]]])
    return [
        {
            "model": model,
            "task": task,
            "metric": MAIN_METRIC[task],
            "datasets": len(values),
            "average": sum(values) / len(values) if None not in values else None,
        }
        for (model, task), values in groups.items()
    ]


def comparison_rows(comparison: dict, dataset: str) -> list[dict]:
    """One row per metric, in summary column order: first − second, with its paired interval."""
    first, second = comparison["models"]
    task = comparison["task"]
    differences = metric_values(comparison["difference"], task)
    intervals = metric_values(comparison["intervals"], task) if comparison.get("intervals") else {}
    rows = []
    for column in columns_for([differences]):
        if column not in differences:
            continue
        interval = intervals.get(column)
        rows.append(
            {
                "dataset": dataset,
                "task": task,
                "first": first,
                "second": second,
                "metric": column,
                "difference": differences[column],
                "ci_low": interval[0] if interval else None,
                "ci_high": interval[1] if interval else None,
            }
        )
    return rows


def comparisons_markdown(rows: list[dict]) -> list[str]:
    by_pair = {}
    for row in rows:
        by_pair.setdefault((row["dataset"], row["first"], row["second"], row["task"]), {})[row["metric"]] = row
    lines = []
    for task, metric_names in COMPARED_IN_MARKDOWN.items():
        pairs = [(key, metrics) for key, metrics in by_pair.items() if key[3] == task]
        if not pairs:
            continue
        columns = ["dataset", "first − second", *metric_names]
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for (dataset, first, second, _), metrics in pairs:
            cells = [
                _cell({"d": m["difference"], "d_ci_low": m["ci_low"], "d_ci_high": m["ci_high"]}, "d")
                for m in (metrics[name] for name in metric_names)
            ]
            lines.append("| " + " | ".join([dataset, f"{first} − {second}", *cells]) + " |")
        lines.append("")
    return lines


HEADLINE_START = "<!-- headline: generated by the summary stage -->"
HEADLINE_END = "<!-- /headline -->"
DIRECTION_NAMES = {"t2i": "text→image", "i2t": "image→text"}


def headline_lines(rows: list[dict]) -> list[str]:
    """The numbers a reader looks for first, one small table per retrieval result and one for classification.

    The README carries this block verbatim, and a test compares it with a fresh run.
    """
    lines = [HEADLINE_START]
    for row in (row for row in rows if row["task"] == "retrieval"):
        lines += [
            "",
            f"**{row['model']}** on **{row['dataset']}** ({row['images']} images, {row['texts']} captions):",
            "",
            "| direction | R@1 | R@5 | R@10 | mean recall (CN-CLIP) | mean rank | median rank |",
            "|---|---|---|---|---|---|---|",
        ]
        for direction, name in DIRECTION_NAMES.items():
            cells = [_cell(row, f"{direction}_{metric}") for metric in ("R@1", "R@5", "R@10")]
            cells += [_number(row[f"{direction}_{metric}"]) for metric in ("mean_recall", "mean_rank", "median_rank")]
            lines.append("| " + " | ".join([name, *cells]) + " |")
        lines += ["", f"Rsum {_cell(row, 'rsum')}, mean recall {_cell(row, 'mean_recall')}."]
    classified = [row for row in rows if row["task"] == "classification"]
    if classified:
        lines += ["", "| model | dataset | top-1 | top-5 | mean per-class recall |", "|---|---|---|---|---|"]
        lines += [
            "| "
            + " | ".join(
                [
                    row["model"],
                    row["dataset"],
                    *(_cell(row, metric) for metric in ("top1", "top5", "mean_per_class_recall")),
                ]
            )
            + " |"
            for row in classified
        ]
    return lines + ["", HEADLINE_END]


def headline_block(text: str, where) -> str:
    """The headline block, markers included, out of a summary.md or a README."""
    start, end = text.find(HEADLINE_START), text.find(HEADLINE_END)
    if start < 0 or end < start:
        raise ValueError(f"{where}: no headline block ({HEADLINE_START} … {HEADLINE_END})")
    return text[start : end + len(HEADLINE_END)]


def embed_headline(readme, summary) -> None:
    """Replace the README's headline block with the one a run wrote (`make readme`)."""
    text = Path(readme).read_text(encoding="utf-8")
    fresh = headline_block(Path(summary).read_text(encoding="utf-8"), summary)
    _write(readme, text.replace(headline_block(text, readme), fresh))


def render_markdown(rows, averages, comparisons) -> str:
    lines = ["# Results", "", "Percentages; 95% bootstrap intervals in brackets where computed.", ""]
    lines += headline_lines(rows)
    lines += ["", "## Every metric"]
    for task in MAIN_METRIC:
        task_rows = [row for row in rows if row["task"] == task]
        if task_rows:
            shown = [
                c for c in columns_for(task_rows) if not c.endswith(INTERVAL_BOUNDS) and any(c in r for r in task_rows)
            ]
            lines += ["", f"### {task.capitalize()}", ""] + markdown_table(task_rows, shown)
    if averages:
        lines += ["", "## Average over datasets", ""]
        lines += markdown_table(averages, ["model", "task", "metric", "datasets", "average"])
    if comparisons:
        lines += [
            "",
            "## Paired comparisons",
            "",
            "Differences of the first model minus the second, from the same resampled queries.",
            "",
        ]
        lines += comparisons_markdown(comparisons)
    return "\n".join(lines).rstrip("\n") + "\n"


def _write(path, text: str) -> None:
    with atomic_output(path) as temporary:
        Path(temporary).write_text(text, encoding="utf-8")


def summarize(entries, comparison_paths, outputs: dict) -> list[dict]:
    """entries: (model, dataset, metrics json path) in row order; outputs: csv, markdown, averages, comparisons."""
    rows = [summary_row(model, dataset, read_json(path)) for model, dataset, path in entries]
    averages = average_rows(rows)
    comparisons = []
    for path in comparison_paths:
        record = read_json(path)
        for comparison in record["comparisons"]:
            comparisons += comparison_rows(comparison, record["dataset"])
    _write(outputs["csv"], render_csv(rows, columns_for(rows)))
    _write(outputs["averages"], render_csv(averages, ["model", "task", "metric", "datasets", "average"]))
    _write(
        outputs["comparisons"],
        render_csv(comparisons, ["dataset", "task", "first", "second", "metric", "difference", "ci_low", "ci_high"]),
    )
    _write(outputs["markdown"], render_markdown(rows, averages, comparisons))
    return rows
