"""A linear probe's scores: top-1 and mean per-class recall on the test split, for each number of shots the
mean over seeds and its spread, and 95% intervals from resampled test images.

The headline (the summary's probe columns, a suite's average) is the largest
number of shots: `all` where it was probed. A bootstrap replicate resamples the
test images once for every seed and number of shots, so an interval holds the
test set's sampling error of the mean over seeds; the spread over seeds (the
sample standard deviation) is the training draws' own.
"""

import numpy as np

from clipeval.probe.protocol import ALL, Fit, ProbeSettings
from clipeval.statistics.bootstrap import bootstrap_record, percentile_intervals

HEADLINE_PREFIX = "probe_"


def top1_and_recall(predicted: np.ndarray, labels: np.ndarray, num_classes: int) -> tuple[float, float]:
    """(top-1, mean per-class recall over the classes with test images), in percent."""
    hits = predicted == labels
    support = np.bincount(labels, minlength=num_classes)
    per_class = np.bincount(labels, weights=hits, minlength=num_classes)
    present = support > 0
    return float(100.0 * hits.mean()), float(100.0 * np.mean(per_class[present] / support[present]))


def headline_shots(shots: list[str]) -> str:
    return ALL if ALL in shots else max(shots, key=int)


def probe_statistic(shots: list[str], seeds: int, num_classes: int, first_column: int = 1):
    """samples {"images": [rows of (label, a prediction per shots and seed …)]} -> the mean over seeds of each
    number of shots' top-1 and mean per-class recall, and the headline's under probe_ names."""
    headline = headline_shots(shots)

    def statistic(samples):
        rows = samples["images"][0]
        labels = rows[:, 0]
        values = {}
        for position, label in enumerate(shots):
            start = first_column + position * seeds
            per_seed = [top1_and_recall(rows[:, start + seed], labels, num_classes) for seed in range(seeds)]
            top1, recall = np.mean(per_seed, axis=0)
            values[label] = {"top1": float(top1), "mean_per_class_recall": float(recall)}
        return {
            f"{HEADLINE_PREFIX}top1": values[headline]["top1"],
            f"{HEADLINE_PREFIX}mean_per_class_recall": values[headline]["mean_per_class_recall"],
            "shots": values,
        }

    return statistic


def probe_samples(record: dict) -> dict:
    """{"images": [rows of (label, each shots' and seed's prediction)]} from a ranks record."""
    columns = [record["labels"]] + [seed for label in record["shots"] for seed in record["predictions"][label]]
    return {"images": [np.column_stack(columns).astype(np.int64)]}


def _spread(values: list[float]) -> float | None:
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def _drawn_ids(fit: Fit, train_ids, few_shot: bool) -> dict:
    """The train split's image ids a fit drew: those it chose the regularisation on and, with few shots, those
    it was fitted on (under `all`, every image)."""
    drawn = {"validated_on": [int(i) for i in train_ids[fit.validated_on]]}
    return {"fitted_on": [int(i) for i in train_ids[fit.fitted_on]], **drawn} if few_shot else drawn


def shot_summary(fits: list[Fit], labels: np.ndarray, num_classes: int, train_ids, few_shot: bool) -> dict:
    scored = [top1_and_recall(fit.predictions, labels, num_classes) for fit in fits]
    top1s, recalls = [top1 for top1, _ in scored], [recall for _, recall in scored]
    return {
        "top1": float(np.mean(top1s)),
        "top1_sd": _spread(top1s),
        "mean_per_class_recall": float(np.mean(recalls)),
        "mean_per_class_recall_sd": _spread(recalls),
        "fits": [
            {
                "seed": fit.seed,
                "l2": fit.l2,
                "validation_top1": fit.validation_top1,
                "top1": top1,
                "mean_per_class_recall": recall,
                **_drawn_ids(fit, train_ids, few_shot),
            }
            for fit, (top1, recall) in zip(fits, scored)
        ],
    }


def score_probe(fits: dict, test_ids, test_labels, num_classes, train_ids, settings: ProbeSettings, bootstrap, seed):
    """(metrics, ranks record) of `fits` ({shots label: [Fit per seed]}, protocol.probe_fits) on the test images;
    `train_ids` are the train split's image ids, in the order the fits' rows count them."""
    shots = list(fits)
    per_shots = {
        label: shot_summary(fits[label], test_labels, num_classes, np.asarray(train_ids), label != ALL)
        for label in shots
    }
    headline = per_shots[headline_shots(shots)]
    metrics = {
        "task": "probe",
        "headline_shots": headline_shots(shots),
        **{f"{HEADLINE_PREFIX}{key}": headline[key] for key in ("top1", "top1_sd")},
        **{f"{HEADLINE_PREFIX}{key}": headline[key] for key in ("mean_per_class_recall", "mean_per_class_recall_sd")},
        "shots": per_shots,
        "counts": {"images": int(len(test_labels)), "train_images": len(train_ids), "classes": int(num_classes)},
        "settings": {
            "shots": shots,
            "seeds": settings.seeds,
            "validation": settings.validation,
            "regularization": list(settings.regularization),
            "max_iterations": settings.max_iterations,
        },
    }
    record = {
        "task": "probe",
        "num_classes": int(num_classes),
        "image_ids": [int(i) for i in test_ids],
        "labels": [int(label) for label in test_labels],
        "shots": shots,
        "seeds": settings.seeds,
        "predictions": {label: [fit.predictions.tolist() for fit in fits[label]] for label in shots},
    }
    if bootstrap:
        statistic = probe_statistic(shots, settings.seeds, num_classes)
        metrics["intervals"] = percentile_intervals(statistic, probe_samples(record), bootstrap, seed)
    metrics["bootstrap"] = bootstrap_record(bootstrap, seed) if bootstrap else None
    return metrics, record
