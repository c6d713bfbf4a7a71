"""Zero-shot classification by group, as DataComp scores its fairness and geography sets (through WILDS): each
group's top-1 and top-5 over its own images, and the worst group's, the least over the groups that have images
(Dollar Street's main metric is the worst income group's top-5, GeoDE's the worst region's top-1).

A labels.jsonl row may carry `"groups": {field: group}` (data/sources/wds_classification.py).
"""

import numpy as np

from clipeval.classification.top_k import TOP_K, top_k_accuracies
from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_keyed_jsonl


def load_groups(path, image_ids: np.ndarray) -> dict[str, np.ndarray] | None:
    """{field: each image's group, in `image_ids` order} from labels.jsonl; None when no row has groups. Then
    every row has them, of the same fields, each an integer."""
    rows = [(where, image_id, row.get("groups")) for where, image_id, row in read_keyed_jsonl(path, "image_id")]
    if all(groups is None for _, _, groups in rows):
        return None
    valid = [(where, groups) for where, _, groups in rows if isinstance(groups, dict) and groups]
    first, fields = (valid[0][0], list(valid[0][1])) if valid else (None, [])
    by_image = {}
    for where, image_id, groups in rows:
        if not isinstance(groups, dict) or not groups:
            having = f", as {first} has" if first else ""
            raise ClipevalError(
                f"{where}: image_id {image_id} has groups {groups!r}, not a mapping of fields to integers{having}"
            )
        if sorted(groups) != sorted(fields):
            raise ClipevalError(f"{where}: groups of the fields {sorted(groups)}, not {sorted(fields)} as on {first}")
        for field, value in groups.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ClipevalError(f"{where}: group {field} is {value!r}, not an integer")
        by_image[image_id] = groups
    missing = [int(image_id) for image_id in image_ids if int(image_id) not in by_image]
    if missing:
        raise ClipevalError(f"{path}: image_id {missing[0]} has no groups")
    return {field: np.array([by_image[int(image_id)][field] for image_id in image_ids]) for field in fields}


def group_metrics(ranks: np.ndarray, groups: dict[str, np.ndarray], num_classes: int) -> dict:
    """by_group: {field: {group: {images, top1, top5}}} in percent; worst_group: {field: {top1, top5, top1_group,
    top5_group}}, each the least over the groups with images and the group it is (the first by number on a tie).
    top-k is None where it is undefined (k of the classes or more)."""
    by_group, worst = {}, {}
    for field, values in groups.items():
        by_group[field] = {
            str(int(value)): {
                "images": int(np.sum(values == value)),
                **top_k_accuracies(ranks[values == value], num_classes),
            }
            for value in np.unique(values)
        }
        worst[field] = {}
        for k in TOP_K:
            column, shown = f"top{k}", by_group[field]
            # The first group by number on a tie (np.unique ordered them); none where top-k is undefined.
            defined = [group for group in shown if shown[group][column] is not None]
            least = min(defined, key=lambda group: shown[group][column]) if defined else None
            worst[field][column] = shown[least][column] if least is not None else None
            worst[field][f"{column}_group"] = least
    return {"by_group": by_group, "worst_group": worst}


def worst_group_values(ranks: np.ndarray, groups: dict[str, np.ndarray], num_classes: int) -> dict:
    """{field: {top1, top5}}: group_metrics' worst groups' numbers alone, as a bootstrap statistic takes them."""
    worst = group_metrics(ranks, groups, num_classes)["worst_group"]
    return {field: {f"top{k}": values[f"top{k}"] for k in TOP_K} for field, values in worst.items()}
