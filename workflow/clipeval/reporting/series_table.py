"""A checkpoint series' results over its steps: each dataset's main metric per step, the best step marked.

The best checkpoint of a series on a dataset has the highest value of the
result's main metric (tasks.main_metric, the one the averages use); on
a tie, the earliest step.
"""

from clipeval.tasks import METRIC_LABEL, main_metric

SERIES_COLUMNS = ["series", "step", "model", "dataset", "task", "metric", "value", "ci_low", "ci_high", "best"]


def series_rows(rows: list[dict], series: dict[str, list[tuple[int, str]]]) -> list[dict]:
    """One row per (series, dataset, step), from the summary's rows: datasets in the summary's order, steps
    in increasing order."""
    by_pair = {(row["model"], row["dataset"]): row for row in rows}
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    result = []
    for name, members in series.items():
        for dataset in datasets:
            scored = [(step, by_pair[model, dataset]) for step, model in sorted(members) if (model, dataset) in by_pair]
            if not scored:
                continue
            metric = main_metric(scored[0][1]["task"], scored[0][1])
            values = [row.get(metric) for _, row in scored]
            known = [value for value in values if value is not None]
            best = values.index(max(known)) if known else None
            result += [
                {
                    "series": name,
                    "step": step,
                    "model": row["model"],
                    "dataset": dataset,
                    "task": row["task"],
                    "metric": metric,
                    "value": row.get(metric),
                    "ci_low": row.get(f"{metric}_ci_low"),
                    "ci_high": row.get(f"{metric}_ci_high"),
                    "best": index == best,
                }
                for index, (step, row) in enumerate(scored)
            ]
    return result


def _value_cell(row: dict) -> str:
    if row["value"] is None:
        return "n/a"
    text = f"{row['value']:.2f}"
    if row["ci_low"] is not None:
        text += f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    return f"**{text}** (best)" if row["best"] else text


def series_markdown(rows: list[dict]) -> list[str]:
    """A table per series and dataset: step, model and the main metric, the best checkpoint in bold."""
    groups = {}
    for row in rows:
        groups.setdefault((row["series"], row["dataset"]), []).append(row)
    lines = []
    for (name, dataset), members in groups.items():
        metric = METRIC_LABEL[members[0]["metric"]]
        lines += ["", f"**{name}** on **{dataset}**, {metric} by step:", "", f"| step | model | {metric} |"]
        lines.append("|---|---|---|")
        lines += [f"| {row['step']} | {row['model']} | {_value_cell(row)} |" for row in members]
    return lines


def read_series_csv(path) -> list[dict]:
    """The rows of a summary's series.csv as text; none when it is missing or cannot be read."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def member_headline(rows: list[dict], model: str) -> str:
    """One series member's main metrics from series.csv's rows, `shapes-test mean recall 12.34, …` with the
    best step marked; empty when the rows have none of its."""
    parts = []
    for row in rows:
        if row.get("model") != model:
            continue
        label = METRIC_LABEL.get(row.get("metric"), row.get("metric"))
        value = f"{float(row['value']):.2f}" if row.get("value") else "n/a"
        parts.append(f"{row['dataset']} {label} {value}{' (best so far)' if row.get('best') == 'yes' else ''}")
    return ", ".join(parts)
