"""Retrieval metrics from the full ranking: ranks, folds, intervals, edge cases.

The references here rank by sorting whole rows of exactly computed scores;
features are small integers so every score, and every tie, is exact.
"""

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from near_ties import near_duplicates, unit_rows

from clipeval.comparison import compare_models
from clipeval.data.captions import Captions
from clipeval.errors import ClipevalError
from clipeval.ranking_rule import exact_scores
from clipeval.retrieval import ranks as ranks_module
from clipeval.retrieval.metrics import FeatureSet, score_retrieval
from clipeval.retrieval.ranks import first_positive_ranks


def captions_from(pairs):
    ids = list(pairs)
    return Captions(
        np.array(ids, dtype=np.int64),
        [f"caption {i}" for i in ids],
        [np.array(sorted(set(pairs[i])), dtype=np.int64) for i in ids],
    )


def feature_set(name, features: dict):
    ids = list(features)
    return FeatureSet(Path(name), np.array(ids, dtype=np.int64), np.array([features[i] for i in ids], dtype=np.float32))


def score(truth, image_features, text_features, ks=(1, 5, 10), **options):
    return score_retrieval(
        captions_from(truth),
        Path("texts.jsonl"),
        feature_set("image-features.jsonl", image_features),
        feature_set("text-features.jsonl", text_features),
        list(ks),
        **options,
    )


def test_only_the_asked_k_values_and_rsum_only_where_r1_r5_r10_are():
    images = {1: [1, 0], 2: [1, 0], 3: [0, 1]}
    texts = {10: [1, 0], 11: [0.6, 0.8], 12: [1, 0]}
    truth = {10: [2], 11: [3], 12: [1]}
    metrics, record = score(truth, images, texts, ks=(2, 1), bootstrap=20)
    assert record["recall_at"] == [1, 2]
    for direction in ("t2i", "i2t"):
        assert metrics[direction] == pytest.approx(
            {"R@1": 200 / 3, "R@2": 100.0, "mean_rank": 4 / 3, "median_rank": 1.0}
        )
        assert set(metrics["intervals"][direction]) == {"R@1", "R@2", "mean_rank", "median_rank"}
    assert "rsum" not in metrics and "mean_recall" not in metrics
    assert "rsum" not in metrics["intervals"]


def test_hand_computed_ranks_with_a_tie():
    images = {1: [1, 0], 2: [1, 0], 3: [0, 1]}  # images 1 and 2 are identical
    texts = {10: [1, 0], 11: [0.6, 0.8], 12: [1, 0]}
    truth = {10: [2], 11: [3], 12: [1]}
    metrics, record = score(truth, images, texts, ks=(1, 2, 5, 10))
    # t2i: text 10 sees 1 and 2 tied at the top; the tie goes to the lower id, so its image 2 ranks 2nd.
    assert record["t2i"]["query_ids"] == [10, 11, 12] and record["t2i"]["ranks"] == [2, 1, 1]
    # i2t: image 1 sees texts 10 and 12 tied; 10 goes first, so its text 12 ranks 2nd.
    assert record["i2t"]["query_ids"] == [1, 2, 3] and record["i2t"]["ranks"] == [2, 1, 1]
    for direction in ("t2i", "i2t"):
        assert metrics[direction] == pytest.approx(
            {
                "R@1": 200 / 3,
                "R@2": 100.0,
                "R@5": 100.0,
                "R@10": 100.0,
                "mean_recall": (200 / 3 + 200) / 3,
                "mean_rank": 4 / 3,
                "median_rank": 1.0,
            }
        )
    assert metrics["rsum"] == pytest.approx(2 * (200 / 3 + 200))
    assert metrics["mean_recall"] == pytest.approx(metrics["rsum"] / 6)
    assert metrics["counts"]["images"] == 3 and metrics["counts"]["t2i_queries"] == 3


def reference_ranked_lists(query_features, gallery_features, positives):
    """{query: every gallery id, sorted on (exact score desc, id asc)} for the queries with a positive."""
    return {
        query: sorted(
            gallery_features,
            key=lambda item: (-sum(Fraction(a) * Fraction(b) for a, b in zip(vector, gallery_features[item])), item),
        )
        for query, vector in query_features.items()
        if positives[query]
    }


def reference_ranks(query_features, gallery_features, positives):
    """{query: rank of its first positive} by sorting every gallery item on (exact score desc, id asc)."""
    lists = reference_ranked_lists(query_features, gallery_features, positives)
    return {query: 1 + min(order.index(item) for item in positives[query]) for query, order in lists.items()}


def reference_ranking_metrics(ranked_lists, positives, ks):
    """nDCG@K, MAP@K (trec_eval's map_cut: over all of a query's positives) and MRR@K in percent, averaged over
    the queries, by walking each ranked list."""
    totals = {}
    for query, ranked in ranked_lists.items():
        relevant = positives[query]
        for k in ks:
            found, dcg, precisions, reciprocal = 0, 0.0, 0.0, 0.0
            for position, item in enumerate(ranked[:k], start=1):
                if item in relevant:
                    found += 1
                    dcg += 1 / math.log2(position + 1)
                    precisions += found / position
                    reciprocal = reciprocal or 1 / position
            ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(relevant), k) + 1))
            for name, value in (("nDCG", dcg / ideal), ("MAP", precisions / len(relevant)), ("MRR", reciprocal)):
                totals[f"{name}@{k}"] = totals.get(f"{name}@{k}", 0.0) + 100.0 * value
    return {name: total / len(ranked_lists) for name, total in totals.items()}


def reference_metrics(ranks, ks):
    values = sorted(ranks.values())
    result = {f"R@{k}": 100.0 * sum(r <= k for r in values) / len(values) for k in ks}
    result["mean_recall"] = (result["R@1"] + result["R@5"] + result["R@10"]) / 3
    result["mean_rank"] = sum(values) / len(values)
    middle = len(values) // 2
    result["median_rank"] = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    return result


vectors = st.lists(st.integers(-2, 2), min_size=3, max_size=3).filter(any)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_metric_matches_a_brute_force_ranking(data):
    palette = data.draw(st.lists(vectors, min_size=1, max_size=4))  # few distinct vectors: many exact ties
    image_ids = data.draw(st.lists(st.integers(0, 60), min_size=1, max_size=12, unique=True))
    images = {i: data.draw(st.sampled_from(palette)) for i in image_ids}
    texts, truth = {}, {}
    for text_id in data.draw(st.lists(st.integers(100, 160), min_size=1, max_size=15, unique=True)):
        texts[text_id] = data.draw(st.sampled_from(palette))
        truth[text_id] = data.draw(st.lists(st.sampled_from(image_ids), min_size=1, max_size=3, unique=True))
    ks = sorted(set(data.draw(st.lists(st.integers(1, 14), min_size=1, max_size=4))) | {1, 5, 10})
    ranking_at = sorted(set(data.draw(st.lists(st.integers(1, 14), max_size=3))))
    metrics, _ = score(truth, images, texts, ks, ranking_at=ranking_at, allow_without_positive=True)
    texts_of = {i: {t for t, ims in truth.items() if i in ims} for i in image_ids}
    images_of = {t: set(v) for t, v in truth.items()}
    expected_t2i = reference_metrics(reference_ranks(texts, images, images_of), ks)
    expected_t2i.update(
        reference_ranking_metrics(reference_ranked_lists(texts, images, images_of), images_of, ranking_at)
    )
    expected_i2t = reference_metrics(reference_ranks(images, texts, texts_of), ks)
    expected_i2t.update(
        reference_ranking_metrics(reference_ranked_lists(images, texts, texts_of), texts_of, ranking_at)
    )
    assert metrics["t2i"] == pytest.approx(expected_t2i)
    assert metrics["i2t"] == pytest.approx(expected_i2t)
    # The K values as data, for the summary and the report to lay their columns out by.
    assert (metrics["recall_at"], metrics["ranking_at"]) == (ks, ranking_at)
    rsum = sum(expected_t2i[f"R@{k}"] + expected_i2t[f"R@{k}"] for k in (1, 5, 10))
    assert metrics["rsum"] == pytest.approx(rsum) and metrics["mean_recall"] == pytest.approx(rsum / 6)
    assert metrics["counts"]["i2t_excluded_without_positive"] == sum(not t for t in texts_of.values())


def sort_reference_ranks(queries, gallery, gallery_ids, positives):
    """Rank by lexsorting whole rows of the ranking rule's exact scores (float64 sums of the products)."""
    scores = exact_scores(queries[:, None, :], gallery[None, :, :])
    order = np.lexsort((np.broadcast_to(gallery_ids, scores.shape), -scores), axis=1)
    ranked_ids = gallery_ids[order]
    return np.array([1 + np.flatnonzero(np.isin(row, list(p))).min() for row, p in zip(ranked_ids, positives)])


def folds_dataset(rng, num_images=2000, captions_per_image=2):
    image_ids = rng.permutation(10_000)[:num_images]
    images = rng.integers(-2, 3, size=(num_images, 4))
    images[~images.any(axis=1), 0] = 1
    text_ids = np.arange(num_images * captions_per_image) + 50_000
    owners = np.repeat(image_ids, captions_per_image)
    texts = images[np.repeat(np.arange(num_images), captions_per_image)] + rng.integers(-1, 2, size=(len(text_ids), 4))
    texts[~texts.any(axis=1), 1] = 1
    return image_ids, images, text_ids, owners, texts


@pytest.mark.slow
def test_folds_1k_averages_metrics_computed_within_each_fold():
    image_ids, images, text_ids, owners, texts = folds_dataset(np.random.default_rng(0))
    truth = {int(t): [int(o)] for t, o in zip(text_ids, owners)}
    metrics, record = score(
        truth, dict(zip(image_ids.tolist(), images)), dict(zip(text_ids.tolist(), texts)), protocol="folds-1k"
    )
    assert metrics["protocol"] == "folds-1k" and metrics["counts"]["folds"] == 2 and len(metrics["folds"]) == 2
    sorted_images = np.sort(image_ids)
    per_fold = []
    for fold in range(2):
        fold_images = sorted_images[fold * 1000 : (fold + 1) * 1000]
        image_rows = np.searchsorted(image_ids, fold_images, sorter=np.argsort(image_ids))
        image_rows = np.argsort(image_ids)[image_rows]
        text_rows = np.flatnonzero(np.isin(owners, fold_images))
        t2i = sort_reference_ranks(texts[text_rows], images[image_rows], fold_images, [{o} for o in owners[text_rows]])
        i2t = sort_reference_ranks(
            images[image_rows],
            texts[text_rows],
            text_ids[text_rows],
            [set(text_ids[text_rows][owners[text_rows] == i]) for i in fold_images],
        )
        per_fold.append((t2i, i2t))
        reported = metrics["folds"][fold]
        assert reported["counts"] == {"images": 1000, "texts": 2000}
        assert reported["t2i"]["R@1"] == pytest.approx(100 * np.mean(t2i <= 1))
        assert reported["i2t"]["median_rank"] == pytest.approx(np.median(i2t))
    for direction, index in (("t2i", 0), ("i2t", 1)):
        for k in (1, 5, 10):
            expected = np.mean([100 * np.mean(ranks[index] <= k) for ranks in per_fold])
            assert metrics[direction][f"R@{k}"] == pytest.approx(expected)
        assert metrics[direction]["mean_rank"] == pytest.approx(np.mean([r[index].mean() for r in per_fold]))
    assert metrics["rsum"] == pytest.approx(np.mean([f["rsum"] for f in metrics["folds"]]))
    assert record["folds"] == 2 and sorted(set(record["t2i"]["folds"])) == [0, 1]


def test_folds_need_each_caption_inside_one_fold():
    image_ids, images, text_ids, owners, texts = folds_dataset(np.random.default_rng(1))
    truth = {int(t): [int(o)] for t, o in zip(text_ids, owners)}
    lowest, highest = int(np.min(image_ids)), int(np.max(image_ids))
    truth[int(text_ids[0])] = [lowest, highest]
    with pytest.raises(
        ClipevalError,
        match=rf"texts\.jsonl: text_id {text_ids[0]} describes images in folds 0 and 1;"
        " folds need each caption's images in one fold",
    ):
        score(truth, dict(zip(image_ids.tolist(), images)), dict(zip(text_ids.tolist(), texts)), protocol="folds-1k")


def random_retrieval(rng, num_images, noise=1.5):
    image_ids, images, text_ids, owners, texts = folds_dataset(rng, num_images, 1)
    texts = images + rng.normal(scale=noise, size=images.shape)
    return (
        {int(t): [int(o)] for t, o in zip(text_ids, owners)},
        dict(zip(image_ids.tolist(), images.tolist())),
        dict(zip(text_ids.tolist(), texts.tolist())),
    )


def interval_width(metrics, *path):
    node = metrics["intervals"]
    for key in path:
        node = node[key]
    return node[1] - node[0]


def test_bootstrap_intervals_hold_the_estimate_and_shrink_with_more_queries():
    small = score(*random_retrieval(np.random.default_rng(2), 100), bootstrap=300, seed=0)[0]
    large = score(*random_retrieval(np.random.default_rng(3), 2000), bootstrap=300, seed=0)[0]
    for metrics in (small, large):
        for path in (("t2i", "R@1"), ("i2t", "R@5"), ("t2i", "mean_rank"), ("i2t", "median_rank"), ("rsum",)):
            value, interval = metrics, metrics["intervals"]
            for key in path:
                value, interval = value[key], interval[key]
            assert interval[0] <= value <= interval[1], path
    for path in (("t2i", "R@1"), ("i2t", "R@10"), ("rsum",), ("mean_recall",)):
        assert interval_width(large, *path) < interval_width(small, *path) / 2, path
    assert small["bootstrap"] == {
        "replicates": 300,
        "seed": 0,
        "confidence": 95.0,
        "method": "percentile; queries resampled with replacement within each fold",
    }


def test_bootstrap_is_seeded():
    data = random_retrieval(np.random.default_rng(4), 200)
    first = score(*data, bootstrap=100, seed=7)[0]
    assert score(*data, bootstrap=100, seed=7)[0]["intervals"] == first["intervals"]
    assert score(*data, bootstrap=100, seed=8)[0]["intervals"] != first["intervals"]
    assert score(*data)[0]["bootstrap"] is None and "intervals" not in score(*data)[0]


def test_paired_comparison_is_tighter_than_separate_intervals():
    truth, images, texts = random_retrieval(np.random.default_rng(5), 500, noise=1.0)
    rng = np.random.default_rng(6)
    noisier = {t: (np.array(v) + rng.normal(scale=0.3, size=4)).tolist() for t, v in texts.items()}
    first, first_ranks = score(truth, images, texts, bootstrap=300)
    second, second_ranks = score(truth, images, noisier, bootstrap=300)
    comparison = compare_models(("a", "b"), first_ranks, second_ranks, "b.json", 300, 0)
    difference = comparison["difference"]["rsum"]
    assert difference == pytest.approx(first["rsum"] - second["rsum"])
    low, high = comparison["intervals"]["rsum"]
    assert low <= difference <= high
    separate = interval_width(first, "rsum") + interval_width(second, "rsum")
    assert high - low < separate / 2
    itself = compare_models(("a", "a"), first_ranks, first_ranks, "a.json", 100, 0)
    assert itself["difference"]["t2i"]["R@1"] == 0 and itself["intervals"]["t2i"]["R@1"] == [0.0, 0.0]


def test_hand_computed_ranking_metrics_with_several_positives():
    # Image 1's captions 10 and 12 rank 1st and 3rd among the four captions (12 loses its tie with 11 on id);
    # image 2's one caption, 13, ranks 4th.
    images = {1: [1, 0], 2: [0, 1]}
    texts = {10: [2, 0], 11: [1, 0], 12: [1, 0], 13: [-1, 0]}
    truth = {10: [1], 12: [1], 11: [2], 13: [2]}
    metrics, record = score(truth, images, texts, ks=(1,), ranking_at=(2, 3))
    assert record["ranking_at"] == [2, 3] and record["i2t"]["positive_ranks"] == [[1, 3], [2, 4]]
    log2 = math.log2
    i2t = metrics["i2t"]
    # nDCG@3: image 1 finds 1st and 3rd of an ideal 1st and 2nd; image 2, its 2nd of an ideal 1st and 2nd.
    assert i2t["nDCG@3"] == pytest.approx(
        50 * ((1 + 1 / log2(4)) / (1 + 1 / log2(3)) + (1 / log2(3)) / (1 + 1 / log2(3)))
    )
    assert i2t["nDCG@2"] == pytest.approx(50 * (1 / (1 + 1 / log2(3)) + (1 / log2(3)) / (1 + 1 / log2(3))))
    # AP@3: image 1 (1/1 + 2/3) / 2, image 2 (1/2) / 2: over both positives even where one is beyond K.
    assert i2t["MAP@3"] == pytest.approx(50 * ((1 + 2 / 3) / 2 + 0.5 / 2))
    assert i2t["MAP@2"] == pytest.approx(50 * (1 / 2 + 0.5 / 2))
    assert i2t["MRR@2"] == pytest.approx(50 * (1 + 1 / 2)) and i2t["MRR@3"] == i2t["MRR@2"]
    # t2i: one positive each, so nDCG@K is 1/log2(1 + rank) within K, MAP@K and MRR@K are 1/rank within K.
    assert record["t2i"]["positive_ranks"] == [[r] for r in record["t2i"]["ranks"]]


def test_pairs_of_one_positive_each_are_ranked_in_the_order_of_the_pairs():
    """Queries listed out of order, each with one positive: each pair's rank is its own query's."""
    queries = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    gallery = np.array([[1, 0], [0, 1], [2, 2]], dtype=np.float32)
    owner, positives = np.array([2, 0, 1]), np.array([7, 5, 5])
    expected = ranks_module.first_positive_ranks(queries, gallery, np.array([5, 6, 7]), owner, positives)[owner]
    ranks = ranks_module.every_positive_rank(queries, gallery, np.array([5, 6, 7]), owner, positives)
    assert ranks.tolist() == expected.tolist() == [1, 2, 3]


def test_ndcg_agrees_with_scikit_learn_on_untied_scores():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    images = rng.normal(size=(40, 8))
    texts = np.repeat(images, 3, axis=0) + rng.normal(scale=2.0, size=(120, 8))
    truth = {100 + t: [t // 3] for t in range(120)}
    image_features = dict(enumerate(images.tolist()))
    text_features = {100 + t: row for t, row in enumerate(texts.tolist())}
    metrics, _ = score(truth, image_features, text_features, ks=(1,), ranking_at=(5, 10))
    scores = images.astype(np.float32) @ texts.astype(np.float32).T
    relevant = (np.arange(120)[None, :] // 3 == np.arange(40)[:, None]).astype(float)
    for k in (5, 10):
        assert metrics["i2t"][f"nDCG@{k}"] == pytest.approx(100 * sklearn_metrics.ndcg_score(relevant, scores, k=k))


def test_a_paired_comparison_covers_the_ranking_metrics():
    truth, images, texts = random_retrieval(np.random.default_rng(5), 300, noise=1.0)
    rng = np.random.default_rng(6)
    noisier = {t: (np.array(v) + rng.normal(scale=0.3, size=4)).tolist() for t, v in texts.items()}
    first, first_ranks = score(truth, images, texts, ranking_at=(10,), bootstrap=200)
    second, second_ranks = score(truth, images, noisier, ranking_at=(10,), bootstrap=200)
    comparison = compare_models(("a", "b"), first_ranks, second_ranks, "b.json", 200, 0)
    for direction in ("t2i", "i2t"):
        for name in ("nDCG@10", "MAP@10", "MRR@10"):
            difference = comparison["difference"][direction][name]
            assert difference == pytest.approx(first[direction][name] - second[direction][name])
            low, high = comparison["intervals"][direction][name]
            assert low <= difference <= high
            low, high = first["intervals"][direction][name]
            assert low <= first[direction][name] <= high
    other_ks = score(truth, images, noisier, ranking_at=(5,))[1]
    with pytest.raises(ClipevalError, match=r"^b\.json: its protocol, folds or K values differ"):
        compare_models(("a", "b"), first_ranks, other_ks, "b.json")


@pytest.mark.slow
def test_a_gallery_of_ties_is_ranked_in_bounded_memory(tmp_path):
    """1500 identical images and captions: every score ties, so the exactly scored band is the whole
    1500 × 1500 matrix; scoring it as float64 copies of both sides took 5 GB here."""
    import sys

    from conftest import run_measuring_peak_memory

    program = """
import numpy as np
from clipeval.retrieval.ranks import first_positive_ranks
n, dimension = 1500, 96
rng = np.random.default_rng(0)
vector = rng.standard_normal(dimension).astype(np.float32)
features = np.tile(vector / np.linalg.norm(vector), (n, 1))
image_ids = rng.permutation(10 * n)[:n].astype(np.int64)
positives = image_ids[rng.permutation(n)]
ranks = first_positive_ranks(features, features, image_ids, np.arange(n), positives)
# All scores equal: the ranking rule puts lower ids first.
expected = 1 + np.searchsorted(np.sort(image_ids), positives)
print(bool((ranks == expected).all()))
"""
    result, peak = run_measuring_peak_memory([sys.executable, "-c", program], tmp_path / "peak")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"]
    assert peak < 400 << 20


@pytest.mark.parametrize("tiles", ["one tile", "tiles of 37 columns and 5 rows"])
@pytest.mark.parametrize("wide_band", [0, 10**9], ids=["float64 products", "pairs scored exactly"])
def test_near_ties_below_float32_resolution_get_their_exact_ranks(monkeypatch, tiles, wide_band):
    """Hundreds of gallery items score within float32's resolution of the positives: only the exactly
    scored band ranks them right, in one tile and across row and column tiles, whether the band is first
    narrowed by float64 products or scored pair by pair."""
    monkeypatch.setattr(ranks_module, "WIDE_BAND", wide_band)
    if tiles != "one tile":
        monkeypatch.setattr(ranks_module, "TILE_COLUMNS", 37)
        monkeypatch.setattr(ranks_module, "BUDGET_BYTES", 37 * 5 * 4)
    for seed in range(8):
        rng = np.random.default_rng(seed)
        base = unit_rows(rng, 1, 48)[0]
        gallery = np.concatenate(
            [near_duplicates(rng, base, 300), np.repeat(base[None], 5, axis=0), unit_rows(rng, 200, 48)]
        )
        gallery_ids = rng.permutation(10 * len(gallery))[: len(gallery)].astype(np.int64)
        queries = np.concatenate([base[None], near_duplicates(rng, base, 6), unit_rows(rng, 4, 48)])
        owner = np.repeat(np.arange(len(queries)), 2)
        positive_rows = rng.integers(0, 305, len(owner))  # near or exact copies of the base
        ranks = first_positive_ranks(queries, gallery, gallery_ids, owner, gallery_ids[positive_rows])
        expected = sort_reference_ranks(
            queries, gallery, gallery_ids, [gallery_ids[positive_rows[owner == q]] for q in range(len(queries))]
        )
        assert np.array_equal(ranks, expected), seed


@pytest.mark.parametrize("threads", ["1", "3", "64"])
@pytest.mark.parametrize("tiles", ["one tile", "tiles of 37 columns and 5 rows"])
@pytest.mark.parametrize("wide_band", [0, 10**9], ids=["float64 products", "pairs scored exactly"])
def test_every_positive_of_queries_with_several_gets_its_exact_rank_whatever_the_threads(
    monkeypatch, threads, tiles, wide_band
):
    """Queries owning three to five near-tied positives each (image to text), their pairs shuffled: each pair's
    rank is its rank in the query's exactly sorted row, counting the query's other positives, in any threads
    and tiles, whether the bands are narrowed by float64 products or scored pair by pair."""
    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    monkeypatch.setattr(ranks_module, "WIDE_BAND", wide_band)
    if tiles != "one tile":
        monkeypatch.setattr(ranks_module, "TILE_COLUMNS", 37)
        monkeypatch.setattr(ranks_module, "BUDGET_BYTES", 37 * 5 * 4)
    rng = np.random.default_rng(3)
    base = unit_rows(rng, 1, 48)[0]
    gallery = np.concatenate(
        [near_duplicates(rng, base, 120), np.repeat(base[None], 4, axis=0), unit_rows(rng, 80, 48)]
    )
    gallery_ids = rng.permutation(10 * len(gallery))[: len(gallery)].astype(np.int64)
    queries = np.concatenate([base[None], near_duplicates(rng, base, 5), unit_rows(rng, 3, 48)])
    counts = rng.integers(3, 6, len(queries))
    owner = np.repeat(np.arange(len(queries)), counts)
    positive_rows = np.concatenate([rng.choice(124, count, replace=False) for count in counts])
    # Pairs in no order of their queries, as captions are listed: a tile's queries can be distinct yet unsorted.
    shuffled = rng.permutation(len(owner))
    owner, positive_rows = owner[shuffled], positive_rows[shuffled]
    ranks = ranks_module.every_positive_rank(queries, gallery, gallery_ids, owner, gallery_ids[positive_rows])
    expected = sort_reference_ranks(queries[owner], gallery, gallery_ids, [[i] for i in gallery_ids[positive_rows]])
    assert ranks.tolist() == expected.tolist()


def test_a_tie_alone_in_another_tile_than_the_positive_is_scored_exactly(monkeypatch):
    """A tile whose band holds one item is skipped only when that item is the positive itself."""
    monkeypatch.setattr(ranks_module, "TILE_COLUMNS", 37)
    rng = np.random.default_rng(0)
    gallery = unit_rows(rng, 100, 48)
    gallery[40] = gallery[3]  # an exact copy of the positive, in the next tile, at the same place in it
    gallery_ids = np.arange(100, dtype=np.int64)[::-1].copy()  # the copy has the lower id: it ranks first
    ranks = first_positive_ranks(gallery[3:4], gallery, gallery_ids, np.array([0]), gallery_ids[[3]])
    assert ranks.tolist() == [2]


def test_gallery_smaller_than_k_counts_every_query_found():
    metrics, _ = score({10: [1], 11: [2]}, {1: [1, 0], 2: [0, 1]}, {10: [1, 0], 11: [1, 0]}, ks=(1, 5, 10, 50))
    assert metrics["t2i"] == pytest.approx(
        {
            "R@1": 50.0,
            "R@5": 100.0,
            "R@10": 100.0,
            "R@50": 100.0,
            "mean_recall": 250 / 3,
            "mean_rank": 1.5,
            "median_rank": 1.5,
        }
    )


def test_queries_without_positive_are_listed_or_counted():
    truth, images, texts = {10: [1], 11: [1]}, {1: [1, 0], 2: [0, 1], 3: [1, 1]}, {10: [1, 0], 11: [0, 1]}
    with pytest.raises(
        ClipevalError,
        match=r"^texts\.jsonl: 2 image_id\(s\) have no positive in the gallery: 2, 3 "
        r"\(set metrics\.allow_queries_without_positive to exclude them\)$",
    ):
        score(truth, images, texts)
    metrics, record = score(truth, images, texts, allow_without_positive=True)
    assert metrics["counts"]["i2t_excluded_without_positive"] == 2 and metrics["counts"]["i2t_queries"] == 1
    assert record["i2t"]["query_ids"] == [1]
    assert metrics["counts"]["images"] == 3  # still in the t2i gallery


def test_features_must_cover_the_captions():
    images, texts = {1: [1, 0], 2: [0, 1]}, {10: [1, 0], 11: [0, 1]}
    with pytest.raises(ClipevalError, match=r"^text-features\.jsonl: no feature for text_id 12 \(1 missing\)$"):
        score({10: [1], 11: [2], 12: [2]}, images, texts)
    with pytest.raises(ClipevalError, match=r"^text-features\.jsonl: text_id 11 is not in texts\.jsonl$"):
        score({10: [1]}, images, texts)
    with pytest.raises(
        ClipevalError, match=r"^image-features\.jsonl: no feature for image_id 3, which text_id 11 describes$"
    ):
        score({10: [1], 11: [3]}, images, texts)


def pair_alone(first, second, replicates, seed):
    """A pair's paired intervals and values as one comparison of just those two models draws them."""
    from clipeval.comparison import stacked_samples
    from clipeval.statistics.bootstrap import difference, percentile_intervals

    samples, (of_first, of_second) = stacked_samples([first, second], [None, "second.json"])
    intervals = percentile_intervals(lambda s: difference(of_first(s), of_second(s)), samples, replicates, seed)
    return intervals, [of_first(samples), of_second(samples)]


def test_every_pair_of_a_comparison_job_gets_the_numbers_of_that_pair_alone(tmp_path):
    """compare_all draws each model's metrics once per replicate for all its pairs: every pair's intervals and
    values are exactly those a comparison of the two models alone gives, for retrieval and classification."""
    import json

    from clipeval.classification.metrics import score_classification
    from clipeval.comparison import compare_all

    rng = np.random.default_rng(8)
    truth, images, texts = random_retrieval(rng, 300, noise=1.0)
    retrieval = [
        score(truth, images, {t: (np.array(v) + rng.normal(scale=s, size=4)).tolist() for t, v in texts.items()})[1]
        for s in (0.0, 0.3, 0.6)
    ]
    classes = rng.normal(size=(6, 16)).astype(np.float32)
    labels = rng.integers(0, 6, size=300)
    names = [f"class {i}" for i in range(6)]
    classification = [
        score_classification(
            np.arange(300), (classes[labels] + rng.normal(scale=s, size=(300, 16))).astype(np.float32), classes,
            labels, names, 0, 0,
        )[1]
        for s in (1.0, 1.5, 2.0)
    ]  # fmt: skip
    for task, records in (("retrieval", retrieval), ("classification", classification)):
        paths = []
        for index, record in enumerate(records):
            paths.append(tmp_path / f"{task}-{index}.json")
            paths[-1].write_text(json.dumps(record))
        comparisons = compare_all(["a", "b", "c"], paths, replicates=50, seed=3)
        assert [comparison["models"] for comparison in comparisons] == [["a", "b"], ["a", "c"], ["b", "c"]]
        for comparison, (i, j) in zip(comparisons, [(0, 1), (0, 2), (1, 2)]):
            intervals, values = pair_alone(records[i], records[j], 50, 3)
            assert comparison["intervals"] == intervals, task
            assert list(comparison["values"].values()) == values, task
