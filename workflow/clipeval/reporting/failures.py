"""Which queries a model fails worst on, and what it retrieves for them (the report's failure gallery).

The worst queries are those whose first correct item ranks lowest (ties by
ascending query id); what they retrieve is ranked by the ranking rule of
docs/ARCHITECTURE.md over the query's own gallery (its fold, under a folds
protocol), from exact scores of the features. For classification, the most
frequent (true class, predicted class) confusions and the images behind them.
"""

from dataclasses import dataclass

import numpy as np

from clipeval.classification.metrics import ranked_classes
from clipeval.errors import ClipevalError
from clipeval.ranking_rule import exact_scores, order_pairs_by_ranking_rule
from clipeval.retrieval.metrics import PROTOCOL_FOLD_SIZES, FeatureSet, split_folds


@dataclass(frozen=True)
class Failure:
    query_id: int
    rank: int  # of the first correct item
    positives: list[int]  # the query's correct items
    retrieved: list[int]  # the top items, best first
    scores: list[float]


def worst_queries(query_ids: np.ndarray, ranks: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` queries with the highest rank, ties by ascending query id."""
    return np.lexsort((query_ids, -ranks))[:count]


def top_items(query: np.ndarray, gallery: np.ndarray, gallery_ids: np.ndarray, count: int):
    """(ids, exact scores) of the `count` best gallery items for one query vector, under the ranking rule."""
    scores = exact_scores(query[None, :], gallery)
    order = order_pairs_by_ranking_rule(np.zeros(len(scores), dtype=np.int64), scores, gallery_ids)[:count]
    return gallery_ids[order], scores[order]


def retrieval_failures(
    record: dict, direction: str, queries, gallery, positives_of, gallery_ids_of_fold, count: int, shown: int
) -> list[Failure]:
    """The `count` worst queries of one direction of a ranks record.

    queries, gallery: (ids, matrix) of the query and gallery side's features;
    positives_of(query_id) -> its correct ids; gallery_ids_of_fold[f]: fold f's gallery ids.
    """
    query_ids = np.asarray(record[direction]["query_ids"], dtype=np.int64)
    ranks = np.asarray(record[direction]["ranks"], dtype=np.int64)
    folds = np.asarray(record[direction]["folds"], dtype=np.int64)
    query_rows = {int(i): row for row, i in enumerate(queries[0].tolist())}
    gallery_rows = {int(i): row for row, i in enumerate(gallery[0].tolist())}
    failures = []
    for index in worst_queries(query_ids, ranks, count):
        query_id = int(query_ids[index])
        fold_ids = gallery_ids_of_fold[int(folds[index])]
        rows = np.array([gallery_rows[int(i)] for i in fold_ids], dtype=np.int64)
        ids, scores = top_items(queries[1][query_rows[query_id]], gallery[1][rows], fold_ids, shown)
        failures.append(
            Failure(
                query_id,
                int(ranks[index]),
                sorted(int(i) for i in positives_of(query_id)),
                ids.tolist(),
                scores.tolist(),
            )
        )
    return failures


def confused_pairs(labels: np.ndarray, predicted: np.ndarray, count: int) -> list[tuple[int, int, int]]:
    """The `count` most frequent (true, predicted, images) with true != predicted, ties by class indices."""
    wrong = labels != predicted
    pairs, counts = np.unique(np.column_stack([labels[wrong], predicted[wrong]]), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -counts))[:count]
    return [(int(pairs[i, 0]), int(pairs[i, 1]), int(counts[i])) for i in order]


def confusion_examples(
    image_ids: np.ndarray, labels: np.ndarray, predicted: np.ndarray, true: int, guess: int, count: int
) -> list[int]:
    """The lowest `count` image ids of class `true` classified as `guess`."""
    return np.sort(image_ids[(labels == true) & (predicted == guess)])[:count].tolist()


@dataclass(frozen=True)
class RetrievalGallery:
    t2i: list[Failure]
    i2t: list[Failure]
    text_of: dict  # caption id -> its text
    captions_of: dict  # image id -> its caption ids


def require_retrieval_record(record, ranks_path) -> None:
    if record["task"] != "retrieval":
        raise ClipevalError(f"{ranks_path}: a {record['task']} ranks record, not retrieval")


def retrieval_gallery(record, ranks_path, captions, texts_path, images, texts, count, shown) -> RetrievalGallery:
    """Both directions' worst queries of a retrieval ranks record.

    images, texts: (path, ids, matrix) of the feature files; each fold's gallery is its own under a folds protocol.
    """
    require_retrieval_record(record, ranks_path)
    for direction, (path, ids, _) in (("t2i", texts), ("i2t", images)):
        missing = set(record[direction]["query_ids"]) - set(ids.tolist())
        if missing:
            raise ClipevalError(f"{ranks_path}: {direction} query id {min(missing)} has no features in {path}")
    folds = split_folds(captions, texts_path, FeatureSet(*images), PROTOCOL_FOLD_SIZES[record["protocol"]])
    text_of = dict(zip(captions.text_ids.tolist(), captions.texts))
    images_of = dict(zip(captions.text_ids.tolist(), captions.image_ids))
    captions_of = {}
    for text_id, image_ids in images_of.items():
        for image_id in image_ids.tolist():
            captions_of.setdefault(image_id, []).append(text_id)
    image_side, text_side = images[1:], texts[1:]
    t2i = retrieval_failures(
        record,
        "t2i",
        text_side,
        image_side,
        lambda text_id: images_of[text_id],
        [fold_images for fold_images, _ in folds],
        count,
        shown,
    )
    i2t = retrieval_failures(
        record,
        "i2t",
        image_side,
        text_side,
        lambda image_id: captions_of.get(image_id, []),
        [np.sort(fold.text_ids) for _, fold in folds],
        count,
        shown,
    )
    return RetrievalGallery(t2i, i2t, text_of, captions_of)


@dataclass(frozen=True)
class ClassificationGallery:
    confusion: np.ndarray  # confusion[true, predicted]: images
    pairs: list[tuple[int, int, int]]  # the most confused (true, predicted, images)
    examples: list[list[int]]  # each pair's example image ids


def held_and_predicted(image_ids, labels, predicted):
    """(image ids, true class, predicted class) per image, or per image and class it holds for a multi-label set
    (labels a row of booleans an image): an image whose top-1 class is one it holds is right for that class, and
    its other classes are not counted as confused with it."""
    if labels.ndim == 1:
        return image_ids, labels, predicted
    rows, held = np.nonzero(labels)
    right = labels[np.arange(len(labels)), predicted]
    kept = ~right[rows] | (held == predicted[rows])
    return image_ids[rows[kept]], held[kept], predicted[rows[kept]]


def classification_gallery(image_ids, images, classes, labels, count, shown) -> ClassificationGallery:
    """The confusion matrix of zero-shot predictions (top-1 against each class an image holds) and the `count`
    most confused class pairs."""
    image_ids, labels, predicted = held_and_predicted(image_ids, labels, ranked_classes(images, classes)[:, 0])
    confusion = np.zeros((len(classes), len(classes)), dtype=np.int64)
    np.add.at(confusion, (labels, predicted), 1)
    pairs = confused_pairs(labels, predicted, count)
    examples = [confusion_examples(image_ids, labels, predicted, true, guess, shown) for true, guess, _ in pairs]
    return ClassificationGallery(confusion, pairs, examples)
