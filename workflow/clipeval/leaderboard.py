"""Every scored (model, dataset) pair of a results folder pivoted into one table: models × datasets.

Each cell is the result's headline metric (tasks.main_metric) with its
95% interval, read from the pair's score file in the experiment that scored
it. One model scored by several experiments is one row while they agree on
its definition and, per dataset, on the scoring settings; otherwise each
experiment's is a row of its own, "MODEL (EXPERIMENT)". Within a dataset's
column, the pairs scored under settings other than the column's most common
ones are marked, and a note says how they differ: their numbers are not
comparable with the others. Within a column, the pairs scored under its
settings are put in tiers (tiers.py): the models the data cannot tell apart
from the column's best share its tier.
"""

import html
import json
from collections import Counter, defaultdict
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.experiments import EXPERIMENTS_DIR, RECORD_NAME, differences, read_record
from clipeval.published.check import difference_text, published_markdown, published_rows, tolerance_note
from clipeval.storage.jsonl import read_json
from clipeval.storage.ranks_records import read_ranks_record
from clipeval.tasks import TASKS, main_metric
from clipeval.tiers import RULE, column_tiers

# What a score depends on besides the model and the dataset.
SETTINGS = ("metrics", "knn", "extract")


def scored_pairs(results: Path) -> tuple[list[dict], list[str]]:
    """(one entry per score file under results/experiments/NAME/scores/MODEL/DATASET/, in experiment, model and
    dataset order; "NAME: MODEL on DATASET" of the score files left out). A score file is left out when its
    experiment's record (written by its last successful run) no longer lists the pair: the config dropped the
    model or the dataset, and the file is what an earlier run left."""
    pairs, stale = [], []
    evaluated = {}
    for path in sorted(Path(results).glob(f"{EXPERIMENTS_DIR}/*/scores/*/*/*.json")):
        if path.stem not in TASKS:  # the ranks files beside the scores
            continue
        folder, pair = path.parents[3], f"{path.parent.parent.name} on {path.parent.name}"
        if folder not in evaluated:
            record = folder / RECORD_NAME
            evaluated[folder] = set(read_record(record)["scores"]) if record.is_file() else None
        if evaluated[folder] is not None and pair not in evaluated[folder]:
            stale.append(f"{folder.name}: {pair}")
            continue
        scores = read_json(path)
        metric = main_metric(path.stem, scores)
        if not isinstance(scores.get(metric), (int, float)):
            raise ClipevalError(f"{path}: no {metric} value, so not a clipeval score file")
        config = scores.get("provenance", {}).get("config", {})
        model = {key: value for key, value in config.get("model", {}).items() if key != "name"}
        pairs.append(
            {
                "experiment": path.parents[3].name,
                "model": path.parent.parent.name,
                "dataset": path.parent.name,
                "task": path.stem,
                "metric": metric,
                "value": scores[metric],
                "interval": scores.get("intervals", {}).get(metric),
                "definition": model,
                "settings": {section: config.get(section) for section in SETTINGS},
                "ranks": path.with_name(f"{path.stem}-ranks.json"),
                "published": published_rows(path.parent.parent.name, path.parent.name, scores),
            }
        )
    return labelled_rows(pairs), stale


def labelled_rows(pairs: list[dict]) -> list[dict]:
    """The pairs, each `model` its row's label, one pair per row and dataset: a model's name, or "MODEL
    (EXPERIMENT)" for each experiment's where experiments give the model other definitions, or score it on a
    dataset under other settings."""
    definitions, cells = defaultdict(set), defaultdict(set)
    for pair in pairs:
        # A precomputed-features model's provenance names the files of its dataset alone.
        entry = {key: value for key, value in pair["definition"].items() if key != "features"}
        definitions[pair["model"]].add(_signature(entry))
        cells[pair["model"], pair["dataset"]].add(_signature([pair["definition"], pair["settings"]]))
    split = {model for model, found in definitions.items() if len(found) > 1}
    split |= {model for (model, _), found in cells.items() if len(found) > 1}
    rows, seen = [], set()
    for pair in pairs:
        label = f"{pair['model']} ({pair['experiment']})" if pair["model"] in split else pair["model"]
        if (label, pair["dataset"]) not in seen:
            seen.add((label, pair["dataset"]))
            published = [{**row, "model": label} for row in pair["published"]]
            rows.append({**pair, "model": label, "published": published})
    return rows


def _signature(value) -> str:
    return json.dumps(value, sort_keys=True)


def columns(pairs: list[dict]) -> dict:
    """{(dataset, task, metric): its pairs, with the signature of the settings most of them were scored under}."""
    found = {}
    for key in sorted({(p["dataset"], p["task"], p["metric"]) for p in pairs}):
        column = [p for p in pairs if p["dataset"] == key[0]]
        usual = Counter(_signature(p["settings"]) for p in column).most_common(1)[0][0]
        found[key] = (column, usual)
    return found


def tiers_of(pairs: list[dict]) -> tuple[dict, dict]:
    """({(model, dataset): tier}, {(model, dataset): why it has none}) in each column where two or more pairs were
    scored under the column's settings with bootstrap replicates, read from their ranks records."""
    tiers, untiered = {}, {}
    for (dataset, _, metric), (column, usual) in columns(pairs).items():
        alike = [p for p in column if _signature(p["settings"]) == usual]
        metrics = json.loads(usual)["metrics"] or {}
        replicates = metrics.get("bootstrap") or 0
        if len(alike) < 2 or replicates <= 0:
            continue
        values = {p["model"]: p["value"] for p in alike}
        paths = {p["model"]: p["ranks"] for p in alike}
        records = {model: read_ranks_record(path) for model, path in paths.items()}
        found, why = column_tiers(values, records, paths, metric, replicates, metrics.get("bootstrap_seed", 0))
        tiers.update({(model, dataset): tier for model, tier in found.items()})
        untiered.update({(model, dataset): reason for model, reason in why.items()})
    return tiers, untiered


def pivot(pairs: list[dict], tiers=None, untiered=None) -> dict:
    """{"datasets": [(dataset, task, metric)], "models": [...], "cells": {(model, dataset): text}, "notes": [...],
    "tiered": whether any cell shows a tier}, with the tiers and untiered pairs of tiers_of where given."""
    tiers, untiered = tiers or {}, untiered or {}
    cells, notes = {}, []
    found = columns(pairs)
    for (dataset, _, _), (column, usual_signature) in found.items():
        usual = json.loads(usual_signature)
        for pair in column:
            signature = _signature(pair["settings"])
            low_high = f" [{pair['interval'][0]:.2f}, {pair['interval'][1]:.2f}]" if pair["interval"] else ""
            text = f"{pair['value']:.2f}{low_high}"
            cell = pair["model"], dataset
            if cell in tiers:
                text += f" T{tiers[cell]}"
            if signature != usual_signature:
                changed = differences(pair["settings"], usual)
                shown = "; ".join(f"{name}: {ours} (column: {theirs})" for name, ours, theirs in changed)
                notes.append(f"{pair['model']} on {dataset}: {shown}")
                text += f" ({len(notes)})"
            if cell in untiered:
                notes.append(f"{pair['model']} on {dataset}: no tier: {untiered[cell]}")
                text += f" ({len(notes)})"
            cells[cell] = text
    return {
        "datasets": list(found),
        "models": sorted({p["model"] for p in pairs}),
        "cells": cells,
        "notes": notes,
        "tiered": bool(tiers),
        "published": [row for pair in pairs for row in pair.get("published", ())],
    }


def markdown(table: dict) -> str:
    header = ["model", *(f"{dataset} ({task}, {metric})" for dataset, task, metric in table["datasets"])]
    rows = [
        [model, *(table["cells"].get((model, dataset), "") for dataset, _, _ in table["datasets"])]
        for model in table["models"]
    ]
    lines = ["| " + " | ".join(row) + " |" for row in [header, ["---"] * len(header), *rows]]
    lines += ["", RULE] if table.get("tiered") else []
    lines += [""] + [f"({number}) {note}" for number, note in enumerate(table["notes"], 1)] if table["notes"] else []
    if table.get("published"):
        lines += ["", "Published numbers beside the measured ones:", "", *published_markdown(table["published"])]
    return "\n".join(lines) + "\n"


PAGE_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1em; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f2f2f2; text-align: center; }
td:first-child { text-align: left; }
"""


def html_page(table: dict, results: str) -> str:
    """The table as a page of its own: every name escaped, the notes below it as a numbered list."""

    def row(cells, tag):
        return "<tr>" + "".join(f"<{tag}>{html.escape(cell)}</{tag}>" for cell in cells) + "</tr>"

    header = ["model", *(f"{dataset} ({task}, {metric})" for dataset, task, metric in table["datasets"])]
    body = [
        row([model, *(table["cells"].get((model, dataset), "") for dataset, _, _ in table["datasets"])], "td")
        for model in table["models"]
    ]
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in table["notes"])
    published = table.get("published") or []
    published_header = ["model", "dataset", "benchmark", "source", "metric", "measured", "published", "difference"]
    published_body = [
        row(
            [*(r[key] for key in published_header[:5]), f"{r['measured']:.2f}", f"{r['published']:.2f}"]
            + [difference_text(r)],
            "td",
        )
        for r in published
    ]
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>clipeval leaderboard</title>'
        f"<style>{PAGE_STYLE}</style></head><body>\n<h1>Leaderboard of {html.escape(results)}</h1>\n"
        "<p>Each scored model and dataset: the headline metric with its 95% interval. A number in parentheses"
        " after a cell marks a pair scored under other settings than the rest of its column, or one left out of"
        " the column's tiers, and its note says why.</p>\n"
        + (f"<p>{html.escape(RULE)}</p>\n" if table.get("tiered") else "")
        + f"<table>{row(header, 'th')}{''.join(body)}</table>\n"
        + (f"<ol>{notes}</ol>\n" if notes else "")
        + (
            "<h2>Published numbers</h2>\n"
            f"<table>{row(published_header, 'th')}{''.join(published_body)}</table>\n"
            f"<p>{html.escape(tolerance_note())}</p>\n"
            if published
            else ""
        )
        + "</body></html>\n"
    )
