"""Which items are correct for each query, from the captions.

A caption's positives are its image_ids; an image's positives are all the
captions that name it. Only positives inside the gallery count.
"""

from dataclasses import dataclass

import numpy as np

from clipeval.data.captions import Captions
from clipeval.errors import ClipevalError


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
    kept_truth = GroundTruth(
        truth.query_ids[has_positive], new_row[truth.owner[kept_pairs]], truth.positive_ids[kept_pairs]
    )
    return has_positive, kept_truth
