"""Chinese-CLIP compatible scoring of one prediction file against its ground truth.

Ground truth is Chinese-CLIP's: for t2i a texts jsonl (`text_id`, `image_ids`);
for i2t its transformed file (`image_id`, `text_ids`) or the texts jsonl
itself, inverted here. The output carries Chinese-CLIP's fields (`success`,
`score`, `scoreJson` with `r1`, `r5`, `r10`, `mean_recall`) next to ours.
Unlike Chinese-CLIP's scripts, bad input raises instead of writing a failure
record, and lists may be longer than 10.
"""

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.metric_catalog import RSUM_KS
from clipeval.retrieval.directions import DIRECTIONS
from clipeval.retrieval.ground_truth import GroundTruth
from clipeval.retrieval.predictions import PADDING, align_predictions
from clipeval.retrieval.recall import hit_matrix, mean_recall, recall_from_hits
from clipeval.storage.ids import require_id
from clipeval.storage.jsonl import read_jsonl, read_keyed_jsonl


def _positive_lists(path, query_key, positive_key):
    for where, query_id, row in read_keyed_jsonl(path, query_key, "duplicate ground truth for {key} {id}"):
        positives = row.get(positive_key)
        if not isinstance(positives, list) or not positives:
            raise ClipevalError(f"{where}: {query_key} {query_id} needs a non-empty {positive_key} list")
        yield query_id, [require_id(i, f"{where}: {query_key} {query_id}", f"{positive_key} entry") for i in positives]


def _first_row(path) -> dict:
    for _, row in read_jsonl(path):
        return row
    raise ClipevalError(f"{path}: no ground truth")


def load_ground_truth(path, direction: str) -> GroundTruth:
    query_key, predicted_key = DIRECTIONS[direction].query_key, DIRECTIONS[direction].predicted_key
    if direction == "i2t" and "text_id" in _first_row(path):
        inverted = {}
        for text_id, image_ids in _positive_lists(path, "text_id", "image_ids"):
            for image_id in image_ids:
                inverted.setdefault(image_id, []).append(text_id)
        pairs = inverted.items()
    else:
        pairs = list(_positive_lists(path, query_key, predicted_key))
    if not pairs:
        raise ClipevalError(f"{path}: no ground truth")
    query_ids = np.array(sorted(query for query, _ in pairs), dtype=np.int64)
    owner = np.concatenate([np.full(len(set(p)), np.searchsorted(query_ids, q)) for q, p in pairs])
    positives = np.concatenate([np.array(sorted(set(p)), dtype=np.int64) for _, p in pairs])
    return GroundTruth(query_ids, owner, positives)


def check_list_lengths(predictions, ranked: np.ndarray, query_ids, depth: int) -> None:
    lengths = (ranked != PADDING).sum(axis=1)
    short = lengths < depth
    if short.any():
        row = int(np.argmax(short))
        raise ClipevalError(
            f"{predictions.path}: {predictions.direction.query_key} {query_ids[row]} has"
            f" {lengths[row]} predictions, R@{depth} needs {depth}"
        )


def evaluate(truth: GroundTruth, predictions, recall_ks=RSUM_KS) -> dict:
    ks = sorted(set(recall_ks) | set(RSUM_KS))  # Chinese-CLIP's fields need R@1, R@5 and R@10
    ranked = align_predictions(predictions, truth.query_ids)
    check_list_lengths(predictions, ranked, truth.query_ids, max(ks))
    recall = recall_from_hits(hit_matrix(ranked, truth), ks)
    score = mean_recall(recall)
    return {
        "success": True,
        "score": score,
        "scoreJson": {
            "score": score,
            "mean_recall": score,
            "r1": recall["R@1"],
            "r5": recall["R@5"],
            "r10": recall["R@10"],
        },
        "direction": predictions.direction.name,
        "recall": recall,
        "counts": {"queries": int(len(truth.query_ids)), "positive_pairs": int(len(truth.positive_ids))},
    }
