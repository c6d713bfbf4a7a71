"""Two or more models' classification ranks records side by side, for paired comparisons
(clipeval.tasks.classification); a multi-label set's records as classification/multilabel.py reads them."""

import numpy as np

from clipeval.classification.metrics import class_samples, classification_statistic, group_columns, predicted_column
from clipeval.classification.multilabel import multilabel_samples, multilabel_statistic
from clipeval.errors import ClipevalError
from clipeval.statistics.pairing import require_same


def check_pairable(first: dict, second: dict, second_path) -> None:
    require_same(first, second, second_path, ("image_ids", "labels", "num_classes"), "images or labels")
    if bool(first.get("multilabel")) != bool(second.get("multilabel")):
        raise ClipevalError(f"{second_path}: one record is multi-label and the other not")
    if ("groups" in first) != ("groups" in second):
        raise ClipevalError(
            f"{second_path}: one of the two records has no groups (scored before ranks records kept them):"
            " score it again"
        )
    if first.get("groups") != second.get("groups"):
        raise ClipevalError(f"{second_path}: its images' groups differ from the first model's")


def stacked_samples(records: list[dict]) -> tuple[dict, list]:
    first = records[0]
    models = range(len(records))
    num_classes = first["num_classes"]
    if first.get("multilabel"):
        # Which classes each image holds, then each model's places of it, model after model.
        parts = [multilabel_samples(record)["images"][0] for record in records]
        rows = np.column_stack([parts[0], *(part[:, num_classes:] for part in parts[1:])])
        return {"images": [rows]}, [multilabel_statistic(num_classes, i) for i in models]
    # (rank, label, groups …, predicted class) of the first model, then each other model's rank and predicted
    # class after them; the macro F1 only where every record has its predicted classes.
    with_predicted = all("predicted" in record for record in records)
    own_record = first if with_predicted else {key: value for key, value in first.items() if key != "predicted"}
    own = class_samples(own_record)["images"][0]
    fields = ("ranks", "predicted") if with_predicted else ("ranks",)
    rows = np.column_stack([own, *(record[field] for record in records[1:] for field in fields)])
    columns = group_columns(first)
    ranks = [0, *range(own.shape[1], rows.shape[1], len(fields))]
    predicted = [predicted_column(first), *range(own.shape[1] + 1, rows.shape[1], len(fields))]
    return {"images": [rows]}, [
        classification_statistic(num_classes, ranks[i], 1, columns, predicted[i] if with_predicted else None)
        for i in models
    ]
