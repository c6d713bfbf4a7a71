"""The summary: one row per (model, dataset), per-model averages, paired comparisons.

summary.csv holds every metric as a column, in a stable order, with
`_ci_low`/`_ci_high` columns where the metric has a bootstrap interval;
averages.csv and comparisons.csv hold the other two tables; summary.md shows
all three, intervals in brackets.
"""

import csv
import io
from pathlib import Path

from clipeval.metric_catalog import (
    COMPOSITIONALITY_METRICS,
    PROBE_SHOT_METRICS,
)
from clipeval.published.check import published_average, published_markdown, published_rows
from clipeval.reporting import headlines
from clipeval.reporting.markdown_cells import cell
from clipeval.reporting.series_table import SERIES_COLUMNS, series_markdown, series_rows
from clipeval.reporting.tokenization_table import tokenization_markdown
from clipeval.storage.atomic import atomic_output
from clipeval.storage.jsonl import read_json
from clipeval.tasks import TASKS, main_metric

# The columns after the metrics: each task's fields of its score file (retrieval's protocol), the images, and
# each task's counts.
COUNT_COLUMNS = tuple(
    dict.fromkeys(
        [*(key for task in TASKS.values() for key in task.row_fields), "images"]
        + [count for task in TASKS.values() for count in task.counts]
    )
)
# The tasks' settings a row carries as data from its score file or comparison (retrieval's K values): they
# decide the columns, and are not columns themselves.
SETTINGS = tuple(dict.fromkeys(setting for task in TASKS.values() for setting in task.settings))
INTERVAL_BOUNDS = ("_ci_low", "_ci_high")


def metric_values(metrics: dict, task: str) -> dict:
    """{"t2i_R@1": 17.7, "rsum": ..., "top1": ...}: a metrics file's numbers (or intervals) under column names."""
    record = TASKS[task]
    values = {f"{key}_{name}": value for key in record.nested_under for name, value in metrics[key].items()}
    values.update(
        {metric.column: metrics[metric.column] for metric in record.metrics_of({}) if metric.column in metrics}
    )
    return values


def summary_row(model: str, dataset: str, metrics: dict) -> dict:
    task = metrics.get("task", "retrieval")
    record = TASKS[task]
    row = {"model": model, "dataset": dataset, "task": task, **metric_values(metrics, task)}
    if metrics.get("intervals"):
        for column, interval in metric_values(metrics["intervals"], task).items():
            row[f"{column}_ci_low"], row[f"{column}_ci_high"] = interval if interval else (None, None)
    counts = metrics["counts"]
    row["images"] = counts["images"]
    row.update({key: metrics.get(key, default) for key, default in record.row_fields.items()})
    row.update({count: counts[count] for count in record.counts})
    row.update({setting: metrics[setting] for setting in record.settings})
    return row


def rows_settings(rows: list[dict], settings) -> dict:
    """{setting: every value of it the rows carry}: the K values a table of these rows lays out."""
    return {setting: sorted(_row_ks(rows, setting)) for setting in settings}


def _row_ks(rows: list[dict], setting: str) -> set[int]:
    return {k for row in rows for k in row.get(setting, ())}


def breakdown_rows(model: str, dataset: str, metrics: dict, key: str, label: str) -> list[dict]:
    """A result's rows per part of its `key` breakdown (each row naming the part under `label`), with
    intervals."""
    intervals = (metrics.get("intervals") or {}).get(key, {})
    rows = []
    for part, values in metrics.get(key, {}).items():
        numbers = {name: value for name, value in values.items() if not isinstance(value, list | dict)}
        row = {"model": model, "dataset": dataset, label: part, **numbers}
        for column, interval in intervals.get(part, {}).items():
            row[f"{column}_ci_low"], row[f"{column}_ci_high"] = interval if interval else (None, None)
        rows.append(row)
    return rows


def part_rows(results, key: str) -> list[dict]:
    """Each result's rows per part of its task's breakdown by `key` (a compositionality set's "groups", a
    probe's "shots"), with intervals."""
    return [
        row
        for model, dataset, metrics in results
        for breakdown in TASKS[metrics.get("task", "retrieval")].breakdowns
        if breakdown.key == key
        for row in breakdown_rows(model, dataset, metrics, breakdown.key, breakdown.label)
    ]


def worst_group_rows(model: str, dataset: str, metrics: dict) -> list[dict]:
    """A classification result's worst group per group field (classification/groups.py), with how many groups
    it was the least of."""
    return [
        {"model": model, "dataset": dataset, "field": field, "groups": len(metrics["by_group"][field]), **worst}
        for field, worst in metrics.get("worst_group", {}).items()
    ]


GROUP_COLUMNS = ["model", "dataset", "field", "group", "images", "top1", "top5", "worst_top1", "worst_top5"]


def by_group_rows(model: str, dataset: str, metrics: dict) -> list[dict]:
    """A classification result's row per group of each group field (classification/groups.py): its images, top-1
    and top-5, and whether it is the field's worst group by each."""
    worst = metrics.get("worst_group", {})
    return [
        {
            "model": model,
            "dataset": dataset,
            "field": field,
            "group": group,
            **values,
            **{f"worst_{k}": "yes" if worst[field].get(f"{k}_group") == group else "no" for k in ("top1", "top5")},
        }
        for field, groups in metrics.get("by_group", {}).items()
        for group, values in groups.items()
    ]


def metric_columns(rows: list[dict]) -> list[str]:
    """Each task's columns for the settings the rows carry (retrieval's for their K values), task after task."""
    settings = rows_settings(rows, SETTINGS)
    return list(dict.fromkeys(m.column for task in TASKS.values() for m in task.metrics_of(settings)))


def columns_for(rows: list[dict]) -> list[str]:
    """model, dataset, task, every metric column, the counts, then the interval bounds of the metrics that have
    them."""
    metrics = metric_columns(rows)
    present = {key for row in rows for key in row}
    interval_columns = [c + bound for c in metrics for bound in INTERVAL_BOUNDS if c + bound in present]
    return ["model", "dataset", "task", *metrics, *COUNT_COLUMNS, *interval_columns]


def render_csv(rows: list[dict], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        values = {key: value for key, value in row.items() if key not in SETTINGS}
        writer.writerow(
            {key: (round(value, 4) if isinstance(value, float) else value) for key, value in values.items()}
        )
    return buffer.getvalue()


def markdown_table(rows: list[dict], columns: list[str]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row, column) for column in columns) + " |" for row in rows]
    return lines


def average_rows(rows: list[dict]) -> list[dict]:
    """Per model, task and main metric (a multi-label set's mAP apart from the other sets' top-1), the
    unweighted mean of the metric over the datasets."""
    groups = {}
    for row in rows:
        metric = main_metric(row["task"], row)
        groups.setdefault((row["model"], row["task"], metric), []).append(row.get(metric))
    return [
        {
            "model": model,
            "task": task,
            "metric": metric,
            "datasets": len(values),
            "average": sum(values) / len(values) if None not in values else None,
        }
        for (model, task, metric), values in groups.items()
    ]


def comparison_rows(comparison: dict, dataset: str) -> list[dict]:
    """One row per metric, in summary column order: first − second, with its paired interval."""
    first, second = comparison["models"]
    task = comparison["task"]
    settings = {setting: comparison[setting] for setting in TASKS[task].settings if setting in comparison}
    differences = metric_values(comparison["difference"], task)
    intervals = metric_values(comparison["intervals"], task) if comparison.get("intervals") else {}
    rows = []
    for column in columns_for([{**differences, **settings}]):
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
                **settings,
            }
        )
    return rows


def comparisons_markdown(rows: list[dict]) -> list[str]:
    by_pair = {}
    for row in rows:
        by_pair.setdefault((row["dataset"], row["first"], row["second"], row["task"]), {})[row["metric"]] = row
    lines = []
    for task in TASKS.values():
        pairs = [(key, metrics) for key, metrics in by_pair.items() if key[3] == task.name]
        if not pairs:
            continue
        shown = task.compared_metrics(rows_settings([row for _, ms in pairs for row in ms.values()], task.settings))
        # A metric only some datasets define (the image score: Winoground's, not SugarCrepe's) is blank elsewhere.
        metric_names = [m.column for m in shown if any(m.column in metrics for _, metrics in pairs)]
        columns = ["dataset", "first − second", *metric_names]
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for (dataset, first, second, _), metrics in pairs:
            cells = [
                cell({"d": m["difference"], "d_ci_low": m["ci_low"], "d_ci_high": m["ci_high"]}, "d") if m else ""
                for m in (metrics.get(name) for name in metric_names)
            ]
            lines.append("| " + " | ".join([dataset, f"{first} − {second}", *cells]) + " |")
        lines.append("")
    return lines


HEADLINE_START = "<!-- headline: generated by the summary stage -->"
HEADLINE_END = "<!-- /headline -->"


def headline_lines(rows: list[dict]) -> list[str]:
    """The numbers a reader looks for first: each task's part, by the function its record names
    (reporting/headlines.py), of its rows.

    The README carries this block verbatim, and a test compares it with a fresh run.
    """
    lines = [HEADLINE_START]
    for task in TASKS.values():
        rows_of_task = [row for row in rows if row["task"] == task.name]
        if task.headline_block and rows_of_task:
            lines += getattr(headlines, task.headline_block)(rows_of_task)
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


def suite_rows(suite: dict) -> tuple[list[dict], list[dict]]:
    """(a row per model: its average over the suite's datasets with its interval, a row per paired difference)."""
    intervals = suite.get("intervals") or {}
    averages, differences = [], []
    for kind, rows, key in (("averages", averages, "model"), ("differences", differences, "first − second")):
        for name, value in suite[kind].items():
            interval = (intervals.get(kind) or {}).get(name)
            rows.append(
                {
                    "suite": suite["suite"],
                    key: name,
                    "datasets": len(suite["datasets"]),
                    "value": value,
                    "value_ci_low": interval[0] if interval else None,
                    "value_ci_high": interval[1] if interval else None,
                }
            )
    return averages, differences


def suites_markdown(suites: list[dict], published=()) -> list[str]:
    lines = ["", "## Suites", "", "Each model's unweighted mean over a suite's datasets of each task's main metric"]
    lines += ["(mean recall, top-1, mAP for a multi-label set, text score), or of the metric open_clip's results"]
    lines += ["table reports for the benchmark a dataset names; paired differences from the same resampled"]
    lines += ["queries. `published`: the mean of that table's values for the model over the same datasets, where it"]
    lines += ["has them all.", ""]
    for suite in suites:
        metrics = ", ".join(f"{dataset} ({metric})" for dataset, metric in suite["metrics"].items())
        averages, differences = suite_rows(suite)
        for row in averages:
            row["published"] = published_average(row["model"], suite["metrics"], list(published))
        shown = ["model", "value"] + (["published"] if any(row["published"] is not None for row in averages) else [])
        lines += [f"**{suite['suite']}**: {metrics}", ""]
        lines += markdown_table(averages, shown) + [""]
        if differences:
            lines += markdown_table(differences, ["first − second", "value"]) + [""]
    return lines


def render_markdown(
    rows,
    averages,
    comparisons,
    series=(),
    groups=(),
    suites=(),
    shots=(),
    tokenization=(),
    published=(),
    worst_groups=(),
) -> str:
    lines = ["# Results", "", "Percentages; 95% bootstrap intervals in brackets where computed.", ""]
    lines += headline_lines(rows)
    lines += ["", "## Every metric"]
    for task in TASKS.values():
        task_rows = [row for row in rows if row["task"] == task.name]
        if task_rows:
            shown = [
                c for c in columns_for(task_rows) if not c.endswith(INTERVAL_BOUNDS) and any(c in r for r in task_rows)
            ]
            lines += ["", f"### {task.title}", ""] + markdown_table(task_rows, shown)
    if groups:
        shown = [m.column for m in COMPOSITIONALITY_METRICS if any(m.column in row for row in groups)]
        lines += ["", "### Compositionality by group", ""]
        lines += markdown_table(list(groups), ["model", "dataset", "group", *shown])
    if worst_groups:
        lines += ["", "### Classification by group", "", "Each group field's worst group: the least top-1 and top-5"]
        lines += ["over its groups with images (DataComp's worst-group accuracy), and which group it is; every group's"]
        lines += ["numbers are in the score file and groups.csv.", ""]
        columns = ["model", "dataset", "field", "groups", "top1", "top1_group", "top5", "top5_group"]
        lines += markdown_table(list(worst_groups), columns)
    if shots:
        columns = ["model", "dataset", "shots", *(m.column for m in PROBE_SHOT_METRICS)]
        lines += ["", "### Linear probe by shots", "", "Means over seeds; the spread is their standard deviation.", ""]
        lines += markdown_table(list(shots), columns)
    if averages:
        lines += ["", "## Average over datasets", ""]
        lines += markdown_table(averages, ["model", "task", "metric", "datasets", "average"])
    if suites:
        lines += suites_markdown(suites, published)
    if comparisons:
        lines += [
            "",
            "## Paired comparisons",
            "",
            "Differences of the first model minus the second, from the same resampled queries.",
            "",
        ]
        lines += comparisons_markdown(comparisons)
    if series:
        lines += [
            "",
            "## Checkpoint series",
            "",
            "Each dataset's main metric at every step; the best checkpoint in bold.",
        ]
        lines += series_markdown(series)
    if published:
        lines += ["", "## Published numbers", "", "Each model of an open_clip tag beside the numbers published for it"]
        lines += ["on the benchmark its dataset names (`published:`), in percent.", ""]
        lines += published_markdown(list(published))
    lines += tokenization_markdown(tokenization)
    return "\n".join(lines).rstrip("\n") + "\n"


def _write(path, text: str) -> None:
    with atomic_output(path) as temporary:
        Path(temporary).write_text(text, encoding="utf-8")


def summarize(entries, comparison_paths, outputs: dict, series=None, suite_paths=(), tokenization=()) -> list[dict]:
    """entries: (model, dataset, metrics json path) in row order; outputs: csv, markdown, averages, comparisons
    and series (its table has a header alone where there is none); series: {name: [(step, model), …]};
    tokenization: (model, dataset, tokenization record path)."""
    results = [(model, dataset, read_json(path)) for model, dataset, path in entries]
    rows = [summary_row(*result) for result in results]
    groups, shots = part_rows(results, "groups"), part_rows(results, "shots")
    by_step = series_rows(rows, series or {})
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
    _write(
        outputs["series"],
        render_csv([{**row, "best": "yes" if row["best"] else "no"} for row in by_step], SERIES_COLUMNS),
    )
    suites = [read_json(path) for path in suite_paths]
    fits = [(model, dataset, read_json(path)) for model, dataset, path in tokenization]
    published = [row for result in results for row in published_rows(*result)]
    worst_groups = [row for result in results for row in worst_group_rows(*result)]
    if "groups" in outputs:
        _write(outputs["groups"], render_csv([row for r in results for row in by_group_rows(*r)], GROUP_COLUMNS))
    markdown = render_markdown(
        rows, averages, comparisons, by_step, groups, suites, shots, fits, published, worst_groups
    )
    _write(outputs["markdown"], markdown)
    return rows
