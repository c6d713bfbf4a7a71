"""Zero-shot classification: class prompts, logits, and the standard metrics.

Classes are ranked for an image by descending logit, ties by ascending class
index: the ranking rule of docs/ARCHITECTURE.md.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clipeval.classification.groups import group_metrics, worst_group_values
from clipeval.classification.top_k import TOP_K, top_k_accuracies
from clipeval.errors import ClipevalError
from clipeval.ranking_rule import exact_scores
from clipeval.statistics.bootstrap import bootstrap_record, percentile_intervals
from clipeval.storage.jsonl import read_json, read_keyed_jsonl

LOGIT_SCALE = 100.0
_SCORE_BUDGET_BYTES = 64 << 20


@dataclass(frozen=True)
class ClassSpec:
    classnames: list[str]
    templates: list[str]


def load_classes(path) -> ClassSpec:
    """classes.json: {"classnames": [...], "templates": ["a photo of a {}.", ...]}."""
    data = read_json(path)
    names, templates = data.get("classnames"), data.get("templates")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ClipevalError(f"{path}: classnames must be a non-empty list of non-empty strings")
    if len(set(names)) != len(names):
        raise ClipevalError(f"{path}: classnames repeat")
    if not isinstance(templates, list) or not templates or not all(isinstance(t, str) and "{}" in t for t in templates):
        raise ClipevalError(f"{path}: templates must be a non-empty list of strings each holding {{}}")
    return ClassSpec(names, templates)


def load_labels(path, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """labels.jsonl: {"image_id": 3, "label": 0} per line; returns (image_ids, labels) by image id."""
    ids, labels = [], []
    for where, image_id, row in read_keyed_jsonl(path, "image_id"):
        if "labels" in row:
            raise ClipevalError(
                f"{where}: image_id {image_id} has several labels (a multi-label set, scored by mean average"
                " precision): this takes one label an image"
            )
        label = row.get("label")
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < num_classes:
            raise ClipevalError(
                f"{where}: image_id {image_id} has label {label!r}, not a class index below {num_classes}"
            )
        ids.append(image_id)
        labels.append(label)
    if not ids:
        raise ClipevalError(f"{path}: no labels")
    order = np.argsort(ids)
    return np.array(ids, dtype=np.int64)[order], np.array(labels, dtype=np.int64)[order]


def prompts_for(spec: ClassSpec) -> list[str]:
    """Every class name in every template, class by class."""
    return [template.format(name) for name in spec.classnames for template in spec.templates]


def class_embeddings(prompt_features: np.ndarray, num_classes: int) -> np.ndarray:
    """Average each class's unit prompt embeddings, then re-normalise."""
    per_class = prompt_features.reshape(num_classes, -1, prompt_features.shape[1]).mean(axis=1)
    norms = np.linalg.norm(per_class, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ClipevalError(f"class {int(np.argmin(norms))}: its prompt embeddings cancel out")
    return (per_class / norms).astype(np.float32)


def scored_in_batches(image_features: np.ndarray, class_features: np.ndarray) -> np.ndarray:
    """cosines[i, c] of each image with each class, as exact_scores (float64 sums in a fixed order), not a BLAS
    product, whose kernels sum in a CPU-dependent order and could flip a near tie on another machine."""
    rows = max(1, _SCORE_BUDGET_BYTES // (8 * class_features.size))
    return np.concatenate(
        [
            exact_scores(image_features[start : start + rows, None, :], class_features[None, :, :])
            for start in range(0, len(image_features), rows)
        ]
    )


def ranked_classes(image_features: np.ndarray, class_features: np.ndarray) -> np.ndarray:
    """Per image, class indices best first: logit = 100 · cosine (scored_in_batches), ties by class index."""
    logits = LOGIT_SCALE * scored_in_batches(image_features, class_features)
    columns = np.broadcast_to(np.arange(logits.shape[1]), logits.shape)
    return np.lexsort((columns, -logits), axis=-1)


def true_class_ranks(ranked: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """1-based place of each image's own class in its ranking."""
    return np.argmax(ranked == labels[:, None], axis=1) + 1


def headline_metrics(ranks: np.ndarray, labels: np.ndarray, num_classes: int) -> dict:
    """Top-1, top-5 and mean per-class recall, in percent, from each image's true-class rank."""
    metrics = top_k_accuracies(ranks, num_classes)
    support = np.bincount(labels, minlength=num_classes)
    hits = np.bincount(labels, weights=(ranks == 1), minlength=num_classes)
    present = support > 0
    metrics["mean_per_class_recall"] = float(100.0 * np.mean(hits[present] / support[present]))
    return metrics


def macro_f1(labels: np.ndarray, predicted: np.ndarray, num_classes: int) -> float:
    """The mean F1 over the classes with images, in percent: WILDS's F1-macro (iWildCam's main metric in
    DataComp), scikit-learn's f1_score(average="macro", labels=the classes present). A class's F1 is
    2·hits / (its images + its predictions), 0 where it has no hit."""
    support = np.bincount(labels, minlength=num_classes)
    hits = np.bincount(labels, weights=(predicted == labels), minlength=num_classes)
    predictions = np.bincount(predicted, minlength=num_classes)
    present = support > 0
    return float(100.0 * np.mean(2.0 * hits[present] / (support[present] + predictions[present])))


def classification_statistic(
    num_classes: int, rank_column=0, label_column=1, group_columns=None, predicted_column=None
):
    """samples {"images": [rows of (rank, label, each group field's group …, predicted class)]} -> the headline
    metrics, each group field's worst group (classification/groups.py) where group_columns gives {field:
    column}, and the macro F1 where predicted_column gives each image's top-1 class."""

    def statistic(samples):
        rows = samples["images"][0]
        numbers = headline_metrics(rows[:, rank_column], rows[:, label_column], num_classes)
        if predicted_column is not None:
            numbers["macro_f1"] = macro_f1(rows[:, label_column], rows[:, predicted_column], num_classes)
        if group_columns:
            groups = {field: rows[:, column] for field, column in group_columns.items()}
            numbers["worst_group"] = worst_group_values(rows[:, rank_column], groups, num_classes)
        return numbers

    return statistic


def classification_metrics(labels: np.ndarray, ranked: np.ndarray, classnames: list[str]) -> dict:
    """Top-1/top-5 accuracy, mean per-class recall, per-class P/R/F1, confusion matrix; percents."""
    num_classes = len(classnames)
    predicted = ranked[:, 0]
    headline = headline_metrics(true_class_ranks(ranked, labels), labels, num_classes)
    confusion = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(confusion, (labels, predicted), 1)
    support = confusion.sum(axis=1)
    predicted_count = confusion.sum(axis=0)
    hits = np.diag(confusion)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(support > 0, hits / np.maximum(support, 1), np.nan)
        precision = np.where(predicted_count > 0, hits / np.maximum(predicted_count, 1), 0.0)
        f1 = np.where(
            precision + np.nan_to_num(recall) > 0,
            2 * precision * np.nan_to_num(recall) / (precision + np.nan_to_num(recall)),
            0.0,
        )
    present = support > 0
    notes = [f"top{k} is undefined with {num_classes} classes" for k in TOP_K if headline[f"top{k}"] is None]
    return {
        **headline,
        "macro_f1": macro_f1(labels, predicted, num_classes),
        "per_class": {
            name: {
                "precision": float(100.0 * precision[i]),
                "recall": None if not present[i] else float(100.0 * recall[i]),
                "f1": float(100.0 * f1[i]),
                "support": int(support[i]),
            }
            for i, name in enumerate(classnames)
        },
        "confusion_matrix": confusion.tolist(),
        "counts": {"images": int(len(labels)), "classes": num_classes, "classes_with_images": int(present.sum())},
        "notes": notes,
    }


def align_labels(feature_ids: np.ndarray, label_ids: np.ndarray, labels: np.ndarray, features_path: Path) -> np.ndarray:
    """Labels in the order of the feature rows; every image needs both."""
    missing = ~np.isin(label_ids, feature_ids)
    if missing.any():
        raise ClipevalError(f"{features_path}: no feature for labelled image_id {label_ids[np.argmax(missing)]}")
    unlabelled = ~np.isin(feature_ids, label_ids)
    if unlabelled.any():
        raise ClipevalError(f"{features_path}: image_id {feature_ids[np.argmax(unlabelled)]} has no label")
    return labels[np.searchsorted(label_ids, feature_ids)]


def class_samples(record: dict) -> dict:
    """{"images": [rows of (rank, label, each group field's group …, predicted class)]} from a ranks record; the
    predicted class where the record has it (records scored before it was kept have not)."""
    groups = list((record.get("groups") or {}).values())
    predicted = [record["predicted"]] if "predicted" in record else []
    return {"images": [np.column_stack([record["ranks"], record["labels"], *groups, *predicted]).astype(np.int64)]}


def group_columns(record: dict, first: int = 2) -> dict[str, int]:
    """{field: its column in class_samples' rows} of a record's groups."""
    return {field: first + index for index, field in enumerate(record.get("groups") or {})}


def predicted_column(record: dict) -> int | None:
    """The column of the predicted class in class_samples' rows, or None where the record has none."""
    return 2 + len(record.get("groups") or {}) if "predicted" in record else None


def score_classification(image_ids, images, class_features, labels, classnames, bootstrap=0, seed=0, groups=None):
    """(metrics, ranks record) for images already aligned with their labels; groups: {field: each image's group}
    where images belong to groups (classification/groups.py), which the record keeps for paired statistics."""
    ranked = ranked_classes(images, class_features)
    metrics = {"task": "classification", **classification_metrics(labels, ranked, classnames)}
    record = {
        "task": "classification",
        "num_classes": len(classnames),
        "image_ids": image_ids.tolist(),
        "labels": labels.tolist(),
        "ranks": true_class_ranks(ranked, labels).tolist(),
        "predicted": ranked[:, 0].tolist(),
    }
    if groups is not None:
        metrics.update(group_metrics(np.array(record["ranks"]), groups, len(classnames)))
        record["groups"] = {field: values.tolist() for field, values in groups.items()}
    if bootstrap:
        statistic = classification_statistic(
            len(classnames), group_columns=group_columns(record), predicted_column=predicted_column(record)
        )
        metrics["intervals"] = percentile_intervals(statistic, class_samples(record), bootstrap, seed)
    metrics["bootstrap"] = bootstrap_record(bootstrap, seed) if bootstrap else None
    return metrics, record
