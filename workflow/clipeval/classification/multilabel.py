"""Zero-shot multi-label classification (Pascal VOC 2007's twenty objects, any of which an image may hold),
scored by mean average precision as CLIP_benchmark scores it: for each class the images are ordered by their
logit for it (ties by ascending image id, the ranking rule of docs/ARCHITECTURE.md), its average precision is
the mean of the precision at each of its images, and mAP is the unweighted mean over the classes with images.

A labels.jsonl row of such a set is {"image_id": 3, "labels": [0, 14]}: every class the image holds.
"""

import numpy as np

from clipeval.classification.metrics import LOGIT_SCALE, TOP_K, scored_in_batches
from clipeval.errors import ClipevalError
from clipeval.statistics.bootstrap import bootstrap_record, percentile_intervals
from clipeval.storage.jsonl import read_keyed_jsonl

MULTILABEL_KEY = "labels"
SINGLE_LABEL_METRICS = (*(f"top{k}" for k in TOP_K), "mean_per_class_recall")


def is_multilabel(path) -> bool:
    """Whether labels.jsonl gives its images several labels (rows with `labels`, not `label`), by its first row:
    the loader of either kind refuses a row of the other."""
    first = next(iter(read_keyed_jsonl(path, "image_id")), None)
    return first is not None and MULTILABEL_KEY in first[2]


def load_multilabels(path, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(image_ids, positives) by image id from a multi-label labels.jsonl: positives[i, c] is whether image i
    holds class c."""
    ids, rows = [], []
    for where, image_id, row in read_keyed_jsonl(path, "image_id"):
        labels = row.get(MULTILABEL_KEY)
        valid = isinstance(labels, list) and all(
            isinstance(label, int) and not isinstance(label, bool) and 0 <= label < num_classes for label in labels
        )
        if not valid or len(set(labels)) != len(labels):
            raise ClipevalError(
                f"{where}: image_id {image_id} has labels {labels!r}, not a list of distinct class indices below"
                f" {num_classes}"
            )
        ids.append(image_id)
        rows.append(labels)
    if not ids:
        raise ClipevalError(f"{path}: no labels")
    if not any(rows):
        raise ClipevalError(f"{path}: no image holds any class: there is nothing to rank")
    positives = np.zeros((len(ids), num_classes), dtype=bool)
    for index, labels in enumerate(rows):
        positives[index, labels] = True
    order = np.argsort(ids)
    return np.array(ids, dtype=np.int64)[order], positives[order]


def class_places(image_features: np.ndarray, class_features: np.ndarray, image_ids: np.ndarray) -> np.ndarray:
    """places[i, c]: image i's 1-based place when the images are ordered by their logit for class c, best first,
    ties by ascending image id (whatever the order of the rows)."""
    logits = LOGIT_SCALE * scored_in_batches(image_features, class_features)
    ids = np.broadcast_to(np.asarray(image_ids)[:, None], logits.shape)
    order = np.lexsort((ids, -logits), axis=0)
    places = np.empty_like(order)
    np.put_along_axis(places, order, np.arange(1, len(logits) + 1)[:, None], axis=0)
    return places


def average_precisions(places: np.ndarray, positives: np.ndarray) -> list[float | None]:
    """Each class's average precision in percent: the mean, over its images, of the precision among the images
    placed up to it; None for a class no image holds. Rows may repeat (a bootstrap replicate): a repeated image
    holds the same classes, so how its copies are ordered among themselves changes nothing."""
    order = np.argsort(places, axis=0, kind="stable")
    truth = np.take_along_axis(positives, order, axis=0)
    precision = np.cumsum(truth, axis=0) / np.arange(1, len(places) + 1)[:, None]
    counts = truth.sum(axis=0)
    sums = (precision * truth).sum(axis=0)
    return [float(100.0 * total / count) if count else None for total, count in zip(sums, counts)]


def mean_average_precision(places: np.ndarray, positives: np.ndarray) -> float | None:
    defined = [value for value in average_precisions(places, positives) if value is not None]
    return float(np.mean(defined)) if defined else None


def multilabel_statistic(num_classes: int, model: int = 0):
    """samples {"images": [rows of (positives, model 0's places, model 1's places, …)]} -> model's metrics."""

    def statistic(samples):
        rows = samples["images"][0]
        positives = rows[:, :num_classes].astype(bool)
        places = rows[:, num_classes * (1 + model) : num_classes * (2 + model)]
        mean = mean_average_precision(places, positives)
        return {**dict.fromkeys(SINGLE_LABEL_METRICS), "mean_average_precision": mean}

    return statistic


def multilabel_samples(record: dict) -> dict:
    """{"images": [rows of (positives, places)]} from a multi-label ranks record."""
    positives = np.zeros((len(record["labels"]), record["num_classes"]), dtype=np.int64)
    for index, labels in enumerate(record["labels"]):
        positives[index, labels] = 1
    return {"images": [np.column_stack([positives, np.asarray(record["ranks"], dtype=np.int64)])]}


def score_multilabel(image_ids, images, class_features, positives, classnames, bootstrap=0, seed=0):
    """(metrics, ranks record) for images already aligned with their positives; the record's `ranks` are each
    image's place for each class."""
    places = class_places(images, class_features, image_ids)
    precisions = average_precisions(places, positives)
    support = positives.sum(axis=0)
    empty = [name for name, count in zip(classnames, support) if not count]
    notes = [f"{', '.join(SINGLE_LABEL_METRICS)}: single-label metrics; a multi-label set is scored by mAP"]
    if empty:
        named = ", ".join(empty[:3]) + (", …" if len(empty) > 3 else "")
        notes.append(f"no image holds {len(empty)} of the classes ({named}): left out of the mAP")
    metrics = {
        "task": "classification",
        "multilabel": True,
        **dict.fromkeys(SINGLE_LABEL_METRICS),
        "mean_average_precision": mean_average_precision(places, positives),
        "per_class": {
            name: {"average_precision": precision, "support": int(count)}
            for name, precision, count in zip(classnames, precisions, support)
        },
        "counts": {
            "images": int(len(positives)),
            "classes": len(classnames),
            "classes_with_images": int((support > 0).sum()),
            "labels": int(support.sum()),
        },
        "notes": notes,
    }
    record = {
        "task": "classification",
        "multilabel": True,
        "num_classes": len(classnames),
        "image_ids": image_ids.tolist(),
        "labels": [np.flatnonzero(row).tolist() for row in positives],
        "ranks": places.tolist(),
    }
    if bootstrap:
        statistic = multilabel_statistic(len(classnames))
        metrics["intervals"] = percentile_intervals(statistic, multilabel_samples(record), bootstrap, seed)
    metrics["bootstrap"] = bootstrap_record(bootstrap, seed) if bootstrap else None
    return metrics, record
