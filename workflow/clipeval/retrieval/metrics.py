"""Retrieval metrics from the full ranking of the features: protocols, ranks, intervals.

Every recall metric derives from one number per query, the rank of its first
correct item (ranks.py): R@K is the percent of queries ranked at most K, mean
and median rank are taken over the ranks. nDCG@K, MAP@K and MRR@K derive from
the rank of every correct item (ranking.py). Under `folds-1k` (COCO-1K) the
images, in ascending id order, are cut into consecutive folds of 1000 with
their own captions; every metric is computed within each fold and the folds
are averaged. Bootstrap replicates resample the queries within each fold.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clipeval.data.captions import Captions
from clipeval.errors import ClipevalError
from clipeval.metric_catalog import has_rsum
from clipeval.retrieval.directions import DIRECTIONS, IMAGE_TO_TEXT, TEXT_TO_IMAGE
from clipeval.retrieval.ground_truth import (
    caption_pairs,
    image_to_text_truth,
    queries_with_positive,
    text_to_image_truth,
)
from clipeval.retrieval.predictions import aligned_predictions
from clipeval.retrieval.ranking import padded_ranks, per_query_values, ranking_columns
from clipeval.retrieval.ranks import every_positive_rank, first_positive_ranks
from clipeval.retrieval.recall import (
    first_hit_positions,
    hit_matrix,
    mean_recall,
    recall_from_ranks,
    rsum,
)
from clipeval.statistics.bootstrap import bootstrap_record, flatten, percentile_intervals, unflatten

PROTOCOL_FOLD_SIZES = {"full": None, "folds-1k": 1000}


@dataclass(frozen=True)
class FeatureSet:
    path: Path
    ids: np.ndarray
    matrix: np.ndarray

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        order = np.argsort(self.ids, kind="stable")
        return order[np.searchsorted(self.ids[order], ids)]

    def matrix_for(self, ids: np.ndarray) -> np.ndarray:
        """The rows of `ids`, in that order; the matrix itself, not a copy, when it is already in that order."""
        if len(ids) == len(self.ids) and np.array_equal(ids, self.ids):
            return self.matrix
        return self.matrix[self.rows_of(ids)]


def check_coverage(captions: Captions, texts_path, images: FeatureSet, texts: FeatureSet) -> None:
    """Text features match the captions one to one; every described image has a feature."""
    missing = ~np.isin(captions.text_ids, texts.ids)
    if missing.any():
        raise ClipevalError(
            f"{texts.path}: no feature for text_id {captions.text_ids[np.argmax(missing)]}"
            f" ({int(missing.sum())} missing)"
        )
    extra = ~np.isin(texts.ids, captions.text_ids)
    if extra.any():
        raise ClipevalError(f"{texts.path}: text_id {texts.ids[np.argmax(extra)]} is not in {texts_path}")
    pair_texts, pair_images = caption_pairs(captions)
    absent = ~np.isin(pair_images, images.ids)
    if absent.any():
        first = int(np.argmax(absent))
        raise ClipevalError(
            f"{images.path}: no feature for image_id {pair_images[first]}, which text_id {pair_texts[first]} describes"
        )


def subset_captions(captions: Captions, keep: np.ndarray) -> Captions:
    return Captions(
        captions.text_ids[keep],
        [t for t, k in zip(captions.texts, keep) if k],
        [ids for ids, k in zip(captions.image_ids, keep) if k],
    )


def split_folds(captions: Captions, texts_path, images: FeatureSet, fold_size) -> list[tuple[np.ndarray, Captions]]:
    """[(fold image ids, fold captions)]: one fold of everything, or consecutive folds of fold_size images."""
    image_ids = np.sort(images.ids)
    if fold_size is None:
        return [(image_ids, captions)]
    if len(image_ids) % fold_size:
        raise ClipevalError(
            f"{images.path}: protocol folds-{fold_size // 1000}k needs a multiple of {fold_size}"
            f" images, there are {len(image_ids)}"
        )
    caption_folds = np.empty(len(captions), dtype=np.int64)
    for row, (text_id, ids) in enumerate(zip(captions.text_ids.tolist(), captions.image_ids)):
        folds = np.unique(np.searchsorted(image_ids, ids) // fold_size)
        if len(folds) > 1:
            raise ClipevalError(
                f"{texts_path}: text_id {text_id} describes images in folds {folds[0]} and"
                f" {folds[1]}; folds need each caption's images in one fold"
            )
        caption_folds[row] = folds[0]
    return [
        (image_ids[start : start + fold_size], subset_captions(captions, caption_folds == start // fold_size))
        for start in range(0, len(image_ids), fold_size)
    ]


# Each direction's positives, from a fold's captions and image ids.
GROUND_TRUTH = {TEXT_TO_IMAGE.name: text_to_image_truth, IMAGE_TO_TEXT.name: image_to_text_truth}


def direction_ranks(
    direction, fold_images, fold_captions, images, texts, texts_path, allow, predictions=None, ks=(), every=False
):
    """(query ids, ranks, each query's positive ranks or None, queries excluded for lacking a positive) of one
    direction within one fold; the positive ranks (padded_ranks' table) when `every`."""
    sides = DIRECTIONS[direction]
    query_name = sides.query_key
    truth = GROUND_TRUTH[direction](fold_captions, fold_images)
    features = {"images": images, "texts": texts}
    queries, gallery = features[sides.query_side], features[sides.gallery_side]
    gallery_ids = {"images": fold_images, "texts": np.sort(fold_captions.text_ids)}[sides.gallery_side]
    full_truth = truth
    kept, truth = queries_with_positive(truth, query_name, texts_path, allow)
    ranked = (queries.matrix_for(truth.query_ids), gallery.matrix_for(gallery_ids), gallery_ids)
    positive_ranks = None
    if every:
        positive_ranks = padded_ranks(
            truth.owner, every_positive_rank(*ranked, truth.owner, truth.positive_ids), len(truth.query_ids)
        )
        ranks = positive_ranks[:, 0]
    else:
        ranks = first_positive_ranks(*ranked, truth.owner, truth.positive_ids)
    if predictions is not None:
        ranked = aligned_predictions(predictions, full_truth.query_ids, gallery_ids, ks)[kept]
        check_predictions_agree(
            predictions,
            query_name,
            truth.query_ids,
            ranks,
            first_hit_positions(hit_matrix(ranked, truth)),
            ranked.shape[1],
        )
    return truth.query_ids, ranks, positive_ranks, int((~kept).sum())


def check_predictions_agree(predictions, query_name, query_ids, ranks, positions, width) -> None:
    """The top-k lists must place each query's first positive where the full ranking does."""
    expected = np.where(ranks <= width, ranks, 0)
    wrong = positions != expected
    if wrong.any():
        row = int(np.argmax(wrong))
        found = f"at position {positions[row]}" if positions[row] else f"not in its top {width}"
        raise ClipevalError(
            f"{predictions.path}: {query_name} {query_ids[row]}: the features rank its first positive at"
            f" {ranks[row]}, the predictions have it {found} (were they made from these features?)"
        )


def direction_metrics(rows: np.ndarray, ks, ranking_at=()) -> dict:
    """The metrics of one direction's rows: each query's first-positive rank, then its ranking values
    (per_query_values' columns)."""
    ranks = rows[:, 0]
    metrics = recall_from_ranks(ranks, ks)
    if has_rsum(ks):
        metrics["mean_recall"] = mean_recall(metrics)
    metrics["mean_rank"] = float(np.mean(ranks))
    metrics["median_rank"] = float(np.median(ranks))
    if ranking_at:
        means = rows[:, 1:].mean(axis=0)
        metrics.update((name, float(mean)) for name, mean in zip(ranking_columns(ranking_at), means))
    return metrics


def fold_metrics(t2i_rows, i2t_rows, ks, ranking_at=()) -> dict:
    t2i, i2t = direction_metrics(t2i_rows, ks, ranking_at), direction_metrics(i2t_rows, ks, ranking_at)
    if not has_rsum(ks):
        return {"t2i": t2i, "i2t": i2t}
    total = rsum(t2i, i2t)
    return {"t2i": t2i, "i2t": i2t, "rsum": total, "mean_recall": total / 6}


def average_over_folds(per_fold: list[dict]) -> dict:
    flat = [flatten(metrics) for metrics in per_fold]
    if len(flat) == 1:  # the mean of one value is that value: skip numpy's per-call cost, once per replicate
        return unflatten({path: float(value) for path, value in flat[0].items()})
    return unflatten({path: float(np.mean([metrics[path] for metrics in flat])) for path in flat[0]})


def sample_width(ranking_at) -> int:
    """Columns of one model's rows in rank_samples: the first-positive rank, then the ranking values."""
    return 1 + len(ranking_columns(ranking_at))


def retrieval_statistic(ks, ranking_at=(), model=0):
    """samples {"t2i": [fold rows], "i2t": [fold rows]} -> fold-averaged metrics of the `model`-th model's
    columns (rows of several models side by side: paired comparisons)."""
    width = sample_width(ranking_at)
    columns = slice(model * width, (model + 1) * width)

    def statistic(samples):
        return average_over_folds(
            [
                fold_metrics(t2i[:, columns], i2t[:, columns], ks, ranking_at)
                for t2i, i2t in zip(samples["t2i"], samples["i2t"])
            ]
        )

    return statistic


def rank_samples(record: dict) -> dict:
    """{"t2i": [per-fold rows], "i2t": ...} from a ranks record: per query, its first-positive rank and its
    ranking values (per_query_values' columns)."""
    samples = {}
    for direction in DIRECTIONS:
        rows = np.array(record[direction]["ranks"], dtype=np.float64)[:, None]
        if record["ranking_at"]:
            positive_ranks = record[direction]["positive_ranks"]
            table = np.zeros((len(positive_ranks), max(map(len, positive_ranks), default=0)), dtype=np.int64)
            for row, ranks in enumerate(positive_ranks):
                table[row, : len(ranks)] = ranks
            rows = np.column_stack([rows, per_query_values(table, record["ranking_at"])])
        folds = np.array(record[direction]["folds"], dtype=np.int64)
        samples[direction] = [rows[folds == fold] for fold in range(record["folds"])]
    return samples


def score_retrieval(
    captions: Captions,
    texts_path,
    images: FeatureSet,
    texts: FeatureSet,
    recall_ks,
    *,
    ranking_at=(),
    protocol="full",
    allow_without_positive=False,
    predictions=None,
    bootstrap=0,
    seed=0,
):
    """(metrics, ranks record): every retrieval metric in percent, its interval and the counts behind it.

    ranking_at: the K values of nDCG@K, MAP@K and MRR@K (none: the record holds no positive ranks).

    predictions ({"t2i": Predictions, "i2t": ...}), when given under the full
    protocol, must agree with the features' ranking.
    """
    if protocol not in PROTOCOL_FOLD_SIZES:
        raise ClipevalError(f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOL_FOLD_SIZES)})")
    check_coverage(captions, texts_path, images, texts)
    ks, ranking_at = sorted(set(recall_ks)), sorted(set(ranking_at))
    folds = split_folds(captions, texts_path, images, PROTOCOL_FOLD_SIZES[protocol])
    check = predictions if predictions and len(folds) == 1 else {}
    record = {
        "task": "retrieval",
        "protocol": protocol,
        "folds": len(folds),
        "recall_at": ks,
        "ranking_at": ranking_at,
    }
    excluded = {}
    for direction in DIRECTIONS:
        query_ids, ranks, positive_ranks, fold_index, excluded[direction] = [], [], [], [], 0
        for fold, (fold_images, fold_captions) in enumerate(folds):
            ids, fold_ranks, fold_positive_ranks, dropped = direction_ranks(
                direction,
                fold_images,
                fold_captions,
                images,
                texts,
                texts_path,
                allow_without_positive,
                check.get(direction),
                ks,
                every=bool(ranking_at),
            )
            query_ids.append(ids), ranks.append(fold_ranks), fold_index.append(np.full(len(ids), fold))
            if ranking_at:
                positive_ranks += [row[row > 0].tolist() for row in fold_positive_ranks]
            excluded[direction] += dropped
        record[direction] = {
            name: np.concatenate(values).tolist()
            for name, values in (("query_ids", query_ids), ("ranks", ranks), ("folds", fold_index))
        }
        if ranking_at:
            record[direction]["positive_ranks"] = positive_ranks
    samples = rank_samples(record)
    statistic = retrieval_statistic(ks, ranking_at)
    per_fold = [statistic({d: [samples[d][f]] for d in samples}) for f in range(len(folds))]
    # The K values as data: readers take them from here, never from the metrics' names.
    metrics = {"task": "retrieval", "protocol": protocol, "recall_at": ks, "ranking_at": ranking_at}
    metrics.update(statistic(samples))
    if bootstrap:
        metrics["intervals"] = percentile_intervals(statistic, samples, bootstrap, seed)
    metrics["bootstrap"] = bootstrap_record(bootstrap, seed) if bootstrap else None
    if len(folds) > 1:
        metrics["folds"] = [
            {**values, "counts": {"images": len(fold_images), "texts": len(fold_captions)}}
            for values, (fold_images, fold_captions) in zip(per_fold, folds)
        ]
    metrics["counts"] = {
        "images": int(len(images.ids)),
        "texts": int(len(texts.ids)),
        "folds": len(folds),
        "t2i_queries": len(record["t2i"]["ranks"]),
        "i2t_queries": len(record["i2t"]["ranks"]),
        "t2i_excluded_without_positive": excluded["t2i"],
        "i2t_excluded_without_positive": excluded["i2t"],
    }
    if check:
        metrics["counts"]["predictions_per_query"] = int(min(p.ranked_ids.shape[1] for p in check.values()))
    return metrics, record
