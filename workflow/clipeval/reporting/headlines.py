"""Each task's part of the summary's headline block (summary.md, which the README carries verbatim): the
function its record names (`headline_block`), given the task's summary rows."""

from clipeval.metric_catalog import CLASSIFICATION_METRICS, DEFAULT_RECALL_AT, DIRECTIONS, has_rsum, recall_key
from clipeval.reporting.markdown_cells import cell, number

DIRECTION_NAMES = {direction: label.replace(" ", "") for direction, label in DIRECTIONS.items()}


def retrieval_headline(rows: list[dict]) -> list[str]:
    """A small table per result: each direction's R@K, mean recall and ranks, then Rsum and mean recall."""
    lines = []
    for row in rows:
        ks = sorted(set(row.get("recall_at", ()))) or list(DEFAULT_RECALL_AT)
        rsum_defined = has_rsum(ks)
        ranks = ["mean rank", "median rank"]
        header = ["direction", *map(recall_key, ks), *(["mean recall (CN-CLIP)"] if rsum_defined else []), *ranks]
        lines += [
            "",
            f"**{row['model']}** on **{row['dataset']}** ({row['images']} images, {row['texts']} captions):",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
        ]
        for direction, name in DIRECTION_NAMES.items():
            cells = [cell(row, f"{direction}_{recall_key(k)}") for k in ks]
            numbers = (["mean_recall"] if rsum_defined else []) + ["mean_rank", "median_rank"]
            cells += [number(row[f"{direction}_{metric}"]) for metric in numbers]
            lines.append("| " + " | ".join([name, *cells]) + " |")
        if rsum_defined:
            lines += ["", f"Rsum {cell(row, 'rsum')}, mean recall {cell(row, 'mean_recall')}."]
    return lines


def classification_headline(rows: list[dict]) -> list[str]:
    """One table of every result's tabled metrics; mAP, a multi-label set's metric, only where a set has it."""
    shown = [m for m in CLASSIFICATION_METRICS if m.tabled and any(m.column in row for row in rows)]
    header = ["model", "dataset", *(metric.label for metric in shown)]
    lines = ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + [
        "| " + " | ".join([row["model"], row["dataset"], *(cell(row, metric.column) for metric in shown)]) + " |"
        for row in rows
    ]
