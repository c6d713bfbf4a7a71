"""Each task's metrics, declared once: column, label, which way is better, and the K values of retrieval.

The scorer, the summary, the report's tables and figures, the experiment
listing and the commands' defaults read these declarations, so a metric is
added, renamed or shown in one place.
"""

from dataclasses import dataclass

# R@K reported when the config does not say (metrics.recall_at).
DEFAULT_RECALL_AT = (1, 5, 10)
# nDCG@K, MAP@K and MRR@K reported when the config does not say (metrics.ranking_at): MIEB's main
# retrieval score is nDCG@10.
DEFAULT_RANKING_AT = (10,)
# The ranking metrics, each at every K of metrics.ranking_at, in the summary's column order (ranking.py
# defines them).
RANKING_METRICS = ("nDCG", "MAP", "MRR")
# Rsum and mean recall are defined on R@1, R@5 and R@10 (Karpathy's Rsum,
# Chinese-CLIP's mean recall): computed and shown only where all three are.
RSUM_KS = (1, 5, 10)
DIRECTIONS = {"t2i": "text → image", "i2t": "image → text"}
# A multi-label set's (classification/multilabel.py), whose top-1 is undefined.
MULTILABEL_METRIC = "mean_average_precision"
# A set whose examples' captions choose several images (WinoGAViL's), which have no text score.
ASSOCIATION_METRIC = "jaccard_score"


@dataclass(frozen=True)
class Metric:
    column: str  # the summary's column; a metrics file holds it nested by direction (t2i_R@5 is t2i → R@5)
    label: str
    group: str = ""  # the report table's column group
    higher_is_better: bool = True
    compared: bool = True  # False: not a paired comparison's (a spread over seeds)
    tabled: bool = True  # False: in summary.csv and the score files, not in the summary's and report's tables


def recall_key(k: int) -> str:
    return f"R@{k}"


def ranking_key(name: str, k: int) -> str:
    return f"{name}@{k}"


def has_rsum(ks) -> bool:
    return set(RSUM_KS) <= set(ks)


def ranking_metrics(ranking_at) -> list[Metric]:
    return [
        Metric(f"{d}_{ranking_key(name, k)}", ranking_key(name, k), group)
        for d, group in DIRECTIONS.items()
        for k in sorted(set(ranking_at))
        for name in RANKING_METRICS
    ]


def retrieval_metrics(ks, ranking_at=()) -> list[Metric]:
    """Every retrieval metric for these K values of R@K and of the ranking metrics, in the summary's column
    order."""
    ks = sorted(set(ks))
    metrics = [Metric(f"{d}_{recall_key(k)}", recall_key(k), group) for d, group in DIRECTIONS.items() for k in ks]
    if has_rsum(ks):
        metrics += [Metric("rsum", "Rsum", "both"), Metric("mean_recall", "mean recall", "both")]
        metrics += [Metric(f"{d}_mean_recall", "mean recall (CN-CLIP)", group) for d, group in DIRECTIONS.items()]
    metrics += [
        Metric(f"{d}_{name}", label, group, higher_is_better=False)
        for d, group in DIRECTIONS.items()
        for name, label in (("mean_rank", "mean rank"), ("median_rank", "median rank"))
    ]
    return metrics + ranking_metrics(ranking_at)


CLASSIFICATION_METRICS = [
    Metric("top1", "top-1"),
    Metric("top5", "top-5"),
    Metric("mean_per_class_recall", "mean per-class recall"),
    Metric("mean_average_precision", "mAP"),  # a multi-label set's only metric (classification/multilabel.py)
    # iWildCam's main metric (WILDS's F1-macro): a suite or published: shows it where a benchmark is scored by it.
    Metric("macro_f1", "macro F1", tabled=False),
]


# SugarCrepe's and ARO's accuracy is the text score; Winoground reports all three (compositionality/metrics.py).
COMPOSITIONALITY_METRICS = [
    Metric("text_score", "text score"),
    Metric("image_score", "image score"),
    Metric("group_score", "group score"),
    Metric("macro_text_score", "macro text score"),
    Metric("jaccard_score", "Jaccard score"),  # examples whose caption chooses several images (WinoGAViL's)
]
# A linear probe's at its largest number of shots (probe/metrics.py): the mean over seeds, and its spread.
PROBE_METRICS = [
    Metric("probe_top1", "probe top-1"),
    Metric("probe_top1_sd", "top-1 spread over seeds", compared=False),
    Metric("probe_mean_per_class_recall", "probe mean per-class recall"),
    Metric("probe_mean_per_class_recall_sd", "recall spread over seeds", compared=False),
]
# The columns of a probe's table by number of shots.
PROBE_SHOT_METRICS = [
    Metric("top1", "top-1"),
    Metric("top1_sd", "top-1 spread", compared=False),
    Metric("mean_per_class_recall", "mean per-class recall"),
    Metric("mean_per_class_recall_sd", "recall spread", compared=False),
]
