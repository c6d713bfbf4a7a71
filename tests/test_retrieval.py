import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clipeval.data.captions import Captions
from clipeval.errors import ClipevalError
from clipeval.metric_catalog import RSUM_KS
from clipeval.retrieval.directions import DIRECTIONS
from clipeval.retrieval.ground_truth import image_to_text_truth, queries_with_positive, text_to_image_truth
from clipeval.retrieval.predictions import Predictions, aligned_predictions, load_predictions
from clipeval.retrieval.recall import hit_matrix, mean_recall, recall_from_hits, rsum


def captions_from(pairs):
    """pairs: {text_id: [image ids]}"""
    ids = list(pairs)
    return Captions(np.array(ids), [f"caption {i}" for i in ids], [np.array(sorted(pairs[i])) for i in ids])


def predictions(direction, rows):
    """rows: {query_id: [ranked ids]}"""
    width = max(len(r) for r in rows.values())
    ranked = np.full((len(rows), width), -1)
    for row, ids in enumerate(rows.values()):
        ranked[row, : len(ids)] = ids
    return Predictions(f"{direction}.jsonl", DIRECTIONS[direction], np.array(list(rows)), ranked)


def score_retrieval(captions, t2i, i2t, recall_ks, allow_without_positive=False):
    """Recall of both directions' top-k lists, through the steps `score-retrieval` checks predictions with."""
    ks = sorted(set(recall_ks) | set(RSUM_KS))
    images, texts = np.sort(i2t.query_ids), np.sort(captions.text_ids)
    result = {"counts": {"images": len(images), "texts": len(texts)}}
    for predictions, truth, gallery in (
        (t2i, text_to_image_truth(captions, images), images),
        (i2t, image_to_text_truth(captions, images), texts),
    ):
        name = predictions.direction.name
        ranked = aligned_predictions(predictions, truth.query_ids, gallery, ks)
        kept, truth = queries_with_positive(
            truth, predictions.direction.query_key, predictions.path, allow_without_positive
        )
        result[name] = recall_from_hits(hit_matrix(ranked[kept], truth), ks)
        result[name]["mean_recall"] = mean_recall(result[name])
        result["counts"][f"{name}_queries"] = int(kept.sum())
        result["counts"][f"{name}_excluded_without_positive"] = int((~kept).sum())
    result["rsum"] = rsum(result["t2i"], result["i2t"])
    result["mean_recall"] = result["rsum"] / 6
    return result


# Three images (1, 2, 3); texts 10-15; text 15 describes both 2 and 3 (MUGE style).
GROUND_TRUTH = {10: [1], 11: [1], 12: [2], 13: [2], 14: [3], 15: [2, 3]}


def test_hand_computed_recall_both_directions():
    t2i = predictions(
        "t2i",
        {
            10: [1, 2, 3],  # hit at 1
            11: [2, 1, 3],  # hit at 2
            12: [3, 1, 2],  # hit at 3
            13: [2, 3, 1],  # hit at 1
            14: [1, 2, 3],  # hit at 3
            15: [1, 3, 2],  # hit at 2 (3 is one of its images)
        },
    )
    i2t = predictions(
        "i2t",
        {
            1: [12, 10, 11, 13, 14, 15],  # first positive at 2
            2: [15, 10, 11, 12, 13, 14],  # 15 names image 2: hit at 1
            3: [10, 11, 12, 13, 14, 15],  # first positive (14) at 5
        },
    )
    metrics = score_retrieval(captions_from(GROUND_TRUTH), t2i, i2t, [1, 2, 3])
    assert metrics["t2i"] == {
        "R@1": pytest.approx(200 / 6),
        "R@2": pytest.approx(400 / 6),
        "R@3": 100.0,
        "R@5": 100.0,
        "R@10": 100.0,
        "mean_recall": pytest.approx((200 / 6 + 200) / 3),
    }
    assert metrics["i2t"] == {
        "R@1": pytest.approx(100 / 3),
        "R@2": pytest.approx(200 / 3),
        "R@3": pytest.approx(200 / 3),
        "R@5": 100.0,
        "R@10": 100.0,
        "mean_recall": pytest.approx((100 / 3 + 200) / 3),
    }
    assert metrics["rsum"] == pytest.approx(200 / 6 + 100 + 100 + 100 / 3 + 100 + 100)
    assert metrics["mean_recall"] == pytest.approx(metrics["rsum"] / 6)
    assert metrics["counts"]["images"] == 3 and metrics["counts"]["texts"] == 6


def reference_recall(truth, ranked, k):
    """Percent of queries (those with a positive) with a positive among their first k predictions."""
    queries = [q for q in ranked if truth[q]]
    hits = [any(item in truth[q] for item in ranked[q][:k]) for q in queries]
    return 100.0 * sum(hits) / len(hits)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_recall_matches_reference_on_random_ground_truth(data):
    images = list(range(100, 100 + data.draw(st.integers(1, 12))))
    truth_t2i = {
        text: set(data.draw(st.lists(st.sampled_from(images), min_size=1, max_size=3, unique=True)))
        for text in range(data.draw(st.integers(1, 20)))
    }
    truth_i2t = {image: {t for t, ims in truth_t2i.items() if image in ims} for image in images}
    if not any(truth_i2t.values()):
        return
    t2i = {t: data.draw(st.permutations(images)) for t in truth_t2i}
    i2t = {i: data.draw(st.permutations(list(truth_t2i))) for i in images}
    ks = list(range(1, 13))
    result = score_retrieval(captions_from(truth_t2i), predictions("t2i", t2i), predictions("i2t", i2t), ks, True)
    for k in ks:
        assert result["t2i"][f"R@{k}"] == pytest.approx(reference_recall(truth_t2i, t2i, k))
        assert result["i2t"][f"R@{k}"] == pytest.approx(reference_recall(truth_i2t, i2t, k))
    assert result["counts"]["i2t_excluded_without_positive"] == sum(not v for v in truth_i2t.values())


def score_errors(t2i_rows, i2t_rows, truth=GROUND_TRUTH, allow=False, ks=(1,)):
    return score_retrieval(
        captions_from(truth), predictions("t2i", t2i_rows), predictions("i2t", i2t_rows), list(ks), allow
    )


FULL_T2I = {t: [1, 2, 3] for t in GROUND_TRUTH}
FULL_I2T = {i: [10, 11, 12, 13, 14, 15] for i in (1, 2, 3)}


def test_missing_prediction_is_named():
    rows = {t: v for t, v in FULL_T2I.items() if t != 13}
    with pytest.raises(ClipevalError, match=r"t2i\.jsonl: no prediction for text_id 13 \(1 missing\)"):
        score_errors(rows, FULL_I2T)


def test_prediction_for_unknown_query_is_named():
    with pytest.raises(ClipevalError, match=r"t2i\.jsonl: prediction for unknown text_id 99"):
        score_errors({**FULL_T2I, 99: [1, 2, 3]}, FULL_I2T)


def test_predicted_id_outside_the_gallery_is_named():
    with pytest.raises(ClipevalError, match=r"t2i\.jsonl: predicted image_id 7 is not in the gallery"):
        score_errors({**FULL_T2I, 10: [7, 2, 3]}, FULL_I2T)


def test_image_without_caption_is_an_error_unless_allowed():
    i2t = {**FULL_I2T, 4: [10, 11, 12, 13, 14, 15]}
    t2i = {t: [1, 2, 3, 4] for t in GROUND_TRUTH}
    with pytest.raises(ClipevalError, match=r"i2t\.jsonl: 1 image_id\(s\) have no positive in the gallery: 4"):
        score_errors(t2i, i2t)
    metrics = score_errors(t2i, i2t, allow=True)
    assert metrics["counts"]["i2t_excluded_without_positive"] == 1
    assert metrics["counts"]["i2t_queries"] == 3


def test_recall_beyond_the_prediction_lists_is_refused():
    images = list(range(1, 13))
    truth = {t: [images[t % 12]] for t in range(24)}
    t2i = {t: images[:5] for t in truth}  # 5 of 12 images: R@10 cannot be known
    i2t = {i: list(range(24)) for i in images}
    with pytest.raises(
        ClipevalError, match=r"t2i\.jsonl: R@10 needs at least 10 predictions per query, the file has 5"
    ):
        score_errors(t2i, i2t, truth=truth)


def test_gallery_smaller_than_k_counts_the_whole_list():
    metrics = score_errors(FULL_T2I, FULL_I2T, ks=(1, 5, 10))
    assert metrics["t2i"]["R@10"] == 100.0 and metrics["i2t"]["R@10"] == 100.0


def test_duplicate_prediction_line_is_named(tmp_path):
    path = tmp_path / "t2i.jsonl"
    path.write_text('{"text_id": 1, "image_ids": [2]}\n{"text_id": 1, "image_ids": [3]}\n')
    with pytest.raises(ClipevalError, match=r"t2i\.jsonl:2: duplicate prediction for text_id 1 \(first on line 1\)"):
        load_predictions(path, "t2i")


def test_prediction_files_may_carry_scores(tmp_path):
    path = tmp_path / "i2t.jsonl"
    path.write_text('{"image_id": 3, "text_ids": [5, 4], "scores": [0.9, 0.1]}\n{"image_id": 1, "text_ids": [4]}\n')
    loaded = load_predictions(path, "i2t")
    assert loaded.query_ids.tolist() == [3, 1]
    assert loaded.ranked_ids.tolist() == [[5, 4], [4, -1]]
