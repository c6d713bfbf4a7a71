"""A run's numbers beside the published ones for the same model and benchmark: the difference, and a mark where
it is beyond TOLERANCE.

A model is known to the tables by open_clip's (arch, pretrained tag), as its
config entry gives them; a dataset says which benchmark it is with
`published: NAME` (benchmarks.py). Both are read from a score file's
provenance, so the summary, the report and the leaderboard find the same
rows from the same file.
"""

from clipeval.published.benchmarks import (
    BENCHMARKS,
    JACCARD_10_12,
    MACRO_F1,
    MEAN_R1,
    WORST_INCOME_TOP5,
    WORST_REGION_TOP1,
)
from clipeval.published.tables import OPENCLIP_RESULTS, SOURCE_NAMES, shipped_index

# Percentage points. A run of the published setup reproduces its numbers to a few tenths; a point or more is a
# difference of setup, which CAUSES names.
TOLERANCE = 1.0
CAUSES = (
    "a difference beyond it comes from the setup, most often: another split or subset (Karpathy's 1K test"
    " images, ImageNet's validation set), other preprocessing (resize, crop, interpolation), other precision"
    " (fp16 or amp against fp32), or other class names and prompt templates"
)
LABELS = {
    MEAN_R1: "mean R@1 of both directions",
    WORST_INCOME_TOP5: "worst income_ds group's top-5",
    WORST_REGION_TOP1: "worst region's top-1",
    MACRO_F1: "macro F1",
    JACCARD_10_12: "Jaccard score, 10-12 candidates",
}


def measured_value(score: dict, metric: str) -> float | None:
    """The score file's value of a published metric; None where the run did not compute it (an R@K not asked
    for, an undefined top-5)."""
    if metric == MEAN_R1:
        both = [measured_value(score, f"{direction}_R@1") for direction in ("t2i", "i2t")]
        return None if None in both else sum(both) / 2
    if metric.startswith(("t2i_", "i2t_")):
        return score.get(metric[:3], {}).get(metric[4:])
    if "/" in metric:  # a path into nested numbers: worst_group/income_ds/top5
        node = score
        for key in metric.split("/"):
            node = node.get(key) if isinstance(node, dict) else None
        return node
    return score.get(metric)


def published_rows(model: str, dataset: str, score: dict, index=None) -> list[dict]:
    """One row per published value of this score file's model on its dataset's benchmark, in the tables'
    order: the measured value beside it, the difference and whether it is beyond TOLERANCE. None of either
    (no benchmark named, a model not of an open_clip tag, a value the run did not compute): no row."""
    config = score.get("provenance", {}).get("config", {})
    benchmark = config.get("dataset", {}).get("published")
    entry = config.get("model", {})
    if benchmark not in BENCHMARKS or not entry.get("arch") or not entry.get("pretrained"):
        return []
    index = shipped_index() if index is None else index
    rows = []
    for published in index.get((entry["arch"], entry["pretrained"], benchmark), ()):
        measured = measured_value(score, published.metric)
        if measured is None:
            continue
        difference = measured - published.value
        rows.append(
            {
                "model": model,
                "dataset": dataset,
                "benchmark": benchmark,
                "source": SOURCE_NAMES[published.source],
                "metric": LABELS.get(published.metric, published.metric),
                "measured": measured,
                "published": published.value,
                "difference": difference,
                "beyond": abs(difference) > TOLERANCE,
            }
        )
    return rows


def published_average(model: str, metrics: dict[str, str], rows: list[dict]) -> float | None:
    """The mean of open_clip's results table's values for `model` over a suite's datasets, each by the metric
    the suite averages it by (metrics: {dataset: metric}); None unless the table has every one of them."""
    main_table = SOURCE_NAMES[OPENCLIP_RESULTS]
    found = {
        row["dataset"]: row["published"]
        for row in rows
        if row["model"] == model
        and row["source"] == main_table
        and row["dataset"] in metrics
        and row["metric"] == LABELS.get(metrics[row["dataset"]], metrics[row["dataset"]])
    }
    return sum(found.values()) / len(found) if found and len(found) == len(metrics) else None


def published_markdown(rows: list[dict]) -> list[str]:
    """The rows as a Markdown table, with the tolerance and the likely causes under it; nothing without rows."""
    if not rows:
        return []
    lines = [
        "| model | dataset | benchmark | source | metric | measured | published | difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [row["model"], row["dataset"], row["benchmark"], row["source"], row["metric"]]
        cells += [f"{row['measured']:.2f}", f"{row['published']:.2f}", difference_text(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + ["", tolerance_note()]


def difference_text(row: dict) -> str:
    """A row's difference as every table shows it: signed, marked where it is beyond TOLERANCE."""
    return f"{row['difference']:+.2f}" + (" ⚠" if row["beyond"] else "")


def tolerance_note() -> str:
    return (
        f"⚠: the measured value is more than {TOLERANCE:.1f} points from the published one; {CAUSES}"
        ' (docs/STAGES.md, "Published numbers").'
    )
