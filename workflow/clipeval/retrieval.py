"""Image-text retrieval recall from top-k predictions and caption ground truth.

A text's positives are its image_ids; an image's positives are all captions
that name it. Recall@K is the percentage of queries with a positive among
their first K predictions.
"""

from dataclasses import dataclass

import numpy as np

from .captions import Captions
from .errors import ClipevalError
from .predictions import PADDING, Predictions

STANDARD_KS = (1, 5, 10)


@dataclass(frozen=True)
class GroundTruth:
    """Positive pairs as parallel arrays: query `query_ids[r]` owns `positive_ids` where `owner == r`."""

    query_ids: np.ndarray
    owner: np.ndarray
    positive_ids: np.ndarray

    def positives_per_query(self) -> np.ndarray:
        return np.bincount(self.owner, minlength=len(self.query_ids))


def _ground_truth(query_ids, pair_queries, pair_positives, gallery_ids) -> GroundTruth:
    in_gallery = np.isin(pair_positives, gallery_ids)
    pair_queries, pair_positives = pair_queries[in_gallery], pair_positives[in_gallery]
    owner = np.searchsorted(query_ids, pair_queries)
    return GroundTruth(query_ids, owner, pair_positives)


def caption_pairs(captions: Captions) -> tuple[np.ndarray, np.ndarray]:
    """All (text_id, image_id) positive pairs."""
    counts = [len(ids) for ids in captions.image_ids]
    return np.repeat(captions.text_ids, counts), np.concatenate(captions.image_ids)


def text_to_image_truth(captions: Captions, gallery_image_ids: np.ndarray) -> GroundTruth:
    texts, images = caption_pairs(captions)
    return _ground_truth(np.sort(captions.text_ids), texts, images, gallery_image_ids)


def image_to_text_truth(captions: Captions, gallery_image_ids: np.ndarray) -> GroundTruth:
    texts, images = caption_pairs(captions)
    return _ground_truth(np.sort(gallery_image_ids), images, texts, np.sort(captions.text_ids))


def align_predictions(predictions: Predictions, truth: GroundTruth, query_name: str) -> np.ndarray:
    """Rows of `predictions.ranked_ids` in `truth.query_ids` order; every query must be predicted once."""
    order = np.argsort(predictions.query_ids, kind="stable")
    sorted_ids = predictions.query_ids[order]
    missing = ~np.isin(truth.query_ids, sorted_ids)
    if missing.any():
        raise ClipevalError(
            f"{predictions.path}: no prediction for {query_name} {truth.query_ids[np.argmax(missing)]}"
            f" ({int(missing.sum())} missing)"
        )
    unknown = ~np.isin(sorted_ids, truth.query_ids)
    if unknown.any():
        raise ClipevalError(
            f"{predictions.path}: prediction for unknown {query_name} {sorted_ids[np.argmax(unknown)]}"
        )
    return predictions.ranked_ids[order]


def check_predicted_ids(predictions: Predictions, ranked: np.ndarray, gallery_ids, item_name) -> None:
    predicted = ranked[ranked != PADDING]
    unknown = ~np.isin(predicted, gallery_ids)
    if unknown.any():
        raise ClipevalError(f"{predictions.path}: predicted {item_name} {predicted[np.argmax(unknown)]} is not in the gallery")


def hit_matrix(ranked: np.ndarray, truth: GroundTruth) -> np.ndarray:
    """hits[r, j]: the j-th prediction of query r is one of its positives."""
    base = int(max(ranked.max(initial=0), truth.positive_ids.max(initial=0))) + 1
    rows = np.arange(len(ranked), dtype=np.int64)[:, None]
    predicted_keys = np.where(ranked != PADDING, rows * base + ranked, -1)
    positive_keys = truth.owner.astype(np.int64) * base + truth.positive_ids
    return np.isin(predicted_keys, positive_keys)


def recall_at(hits: np.ndarray, ks) -> dict[str, float]:
    found_by = np.cumsum(hits, axis=1) > 0
    return {f"R@{k}": float(100.0 * found_by[:, min(k, hits.shape[1]) - 1].mean()) for k in ks}


def queries_with_positive(truth: GroundTruth, query_name, path, allow: bool):
    """(mask of queries that have a positive in the gallery, truth restricted to them)."""
    has_positive = truth.positives_per_query() > 0
    if has_positive.all():
        return has_positive, truth
    lacking = truth.query_ids[~has_positive]
    if not allow:
        shown = ", ".join(str(i) for i in lacking[:10]) + (" …" if len(lacking) > 10 else "")
        raise ClipevalError(
            f"{path}: {len(lacking)} {query_name}(s) have no positive in the gallery: {shown}"
            " (set metrics.allow_queries_without_positive to exclude them)"
        )
    new_row = np.cumsum(has_positive) - 1
    kept_pairs = has_positive[truth.owner]
    kept_truth = GroundTruth(truth.query_ids[has_positive], new_row[truth.owner[kept_pairs]], truth.positive_ids[kept_pairs])
    return has_positive, kept_truth


def first_hit_positions(hits: np.ndarray) -> np.ndarray:
    """1-based position of each row's first hit; 0 where the row has none."""
    return np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)


def aligned_predictions(predictions: Predictions, truth: GroundTruth, gallery_ids, names, ks) -> np.ndarray:
    """The prediction rows in truth order, after checking they can answer R@K for every K."""
    query_name, item_name = names
    ranked = align_predictions(predictions, truth, query_name)
    too_deep = [k for k in ks if k > ranked.shape[1] and ranked.shape[1] < len(gallery_ids)]
    if too_deep:
        raise ClipevalError(
            f"{predictions.path}: R@{max(too_deep)} needs at least {max(too_deep)} predictions per query,"
            f" the file has {ranked.shape[1]} (raise knn.top_k)"
        )
    check_predicted_ids(predictions, ranked, gallery_ids, item_name)
    return ranked


def score_direction(predictions: Predictions, truth: GroundTruth, gallery_ids, names, ks, allow_without_positive):
    ranked = aligned_predictions(predictions, truth, gallery_ids, names, ks)
    kept, truth = queries_with_positive(truth, names[0], predictions.path, allow_without_positive)
    ranked = ranked[kept]
    recall = recall_at(hit_matrix(ranked, truth), ks)
    recall["mean_recall"] = sum(recall[f"R@{k}"] for k in STANDARD_KS) / len(STANDARD_KS)
    return recall, len(ranked), int((~kept).sum())


def rsum_of(t2i: dict, i2t: dict) -> float:
    return sum(t2i[f"R@{k}"] + i2t[f"R@{k}"] for k in STANDARD_KS)


def score_predictions(captions: Captions, t2i: Predictions, i2t: Predictions, recall_ks, allow_without_positive=False) -> dict:
    """Recall from top-k lists alone, both directions, Rsum and mean recall, in percent, with counts.

    Each direction also gets Chinese-CLIP's mean recall, (R@1 + R@5 + R@10) / 3.
    Ranks need the full ranking, which top-k lists do not hold: see retrieval_ranks.
    """
    ks = sorted(set(recall_ks) | set(STANDARD_KS))
    gallery_images = np.sort(i2t.query_ids)
    gallery_texts = np.sort(captions.text_ids)
    t2i_recall, t2i_queries, t2i_excluded = score_direction(
        t2i, text_to_image_truth(captions, gallery_images), gallery_images, ("text_id", "image_id"), ks, allow_without_positive
    )
    i2t_recall, i2t_queries, i2t_excluded = score_direction(
        i2t, image_to_text_truth(captions, gallery_images), gallery_texts, ("image_id", "text_id"), ks, allow_without_positive
    )
    rsum = rsum_of(t2i_recall, i2t_recall)
    top_k = min(t2i.ranked_ids.shape[1], i2t.ranked_ids.shape[1])
    return {
        "t2i": t2i_recall,
        "i2t": i2t_recall,
        "rsum": rsum,
        "mean_recall": rsum / 6,
        "counts": {
            "images": int(len(gallery_images)),
            "texts": int(len(gallery_texts)),
            "t2i_queries": t2i_queries,
            "i2t_queries": i2t_queries,
            "t2i_excluded_without_positive": t2i_excluded,
            "i2t_excluded_without_positive": i2t_excluded,
            "predictions_per_query": int(top_k),
        },
    }
