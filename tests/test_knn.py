import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from near_ties import near_duplicates, unit_rows

from clipeval.devices import gpu_number
from clipeval.errors import ClipevalError
from clipeval.ranking_rule import exact_pair_scores, exact_scores, exact_table_scores
from clipeval.retrieval import topk
from clipeval.retrieval.directions import IMAGE_TO_TEXT, TEXT_TO_IMAGE
from clipeval.retrieval.topk import FaissSearch, Searcher, prediction_rows, top_k


def reference_top_k(queries, gallery, gallery_ids, k):
    """Brute force in plain Python: exact float64 scores, descending, then ascending id."""
    result = []
    for query in queries.astype(np.float64):
        scored = [
            (float(sum(float(a) * float(b) for a, b in zip(query, item))), int(i))
            for item, i in zip(gallery.astype(np.float64), gallery_ids)
        ]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        result.append([i for _, i in scored[:k]])
    return result


SEARCH_NAMES = ("numpy", "faiss", "auto")


def cpu_searcher(gallery, search):
    return Searcher(gallery, "cpu", search)


class ReversedTieSearch(FaissSearch):
    """FAISS's candidates, but ties handed over largest row first."""

    def search(self, queries, k):
        scores, positions = super().search(queries, k)
        order = np.lexsort((-positions, -scores), axis=1)
        return np.take_along_axis(scores, order, 1), np.take_along_axis(positions, order, 1)


def gallery_with_duplicates(rng, n_gallery, dim, duplicates):
    gallery = unit_rows(rng, n_gallery, dim)
    for _ in range(duplicates):  # exact copies make real ties
        gallery[rng.integers(n_gallery)] = gallery[rng.integers(n_gallery)]
    gallery_ids = rng.permutation(np.arange(1000, 1000 + 3 * n_gallery))[:n_gallery].astype(np.int64)
    return gallery, gallery_ids


@pytest.mark.parametrize("search", SEARCH_NAMES)
@settings(max_examples=40, deadline=None)
@given(
    n_gallery=st.integers(1, 40),
    n_queries=st.integers(1, 8),
    dim=st.integers(2, 9),
    k=st.integers(1, 50),
    duplicates=st.integers(0, 30),
    seed=st.integers(0, 10_000),
)
def test_matches_brute_force_with_exact_duplicates(search, n_gallery, n_queries, dim, k, duplicates, seed):
    rng = np.random.default_rng(seed)
    gallery, gallery_ids = gallery_with_duplicates(rng, n_gallery, dim, duplicates)
    queries = unit_rows(rng, n_queries, dim)
    queries[0] = gallery[0]
    ids, scores = top_k(queries, gallery, gallery_ids, k, cpu_searcher(gallery, search))
    assert ids.tolist() == reference_top_k(queries, gallery, gallery_ids, k)
    assert ids.shape == (n_queries, min(k, n_gallery))
    assert (np.diff(scores, axis=1) <= 0).all()


def ranking_rule_top_k(queries, gallery, gallery_ids, k):
    """The whole score matrix under the ranking rule: what the candidate searches must reproduce."""
    scores = exact_scores(queries[:, None, :], gallery[None, :, :])
    order = np.lexsort((np.broadcast_to(gallery_ids, scores.shape), -scores), axis=1)[:, :k]
    return gallery_ids[order], np.take_along_axis(scores, order, axis=1)


# Rows per query in a padded table, or all candidates sorted together: each of the two always, and as chosen.
TABLE_PADDINGS = [0, 2, 10**9]


@pytest.mark.parametrize("padding", TABLE_PADDINGS)
@settings(max_examples=30, deadline=None)
@given(
    n_gallery=st.integers(50, 700),  # many chunks of the numpy search, with and without a ragged last one
    dim=st.integers(2, 6),  # few dimensions: many near ties between float32 scores
    k=st.integers(1, 60),
    duplicates=st.integers(0, 300),
    seed=st.integers(0, 10_000),
)
def test_both_searches_give_the_ranking_rule_s_top_k_on_larger_galleries(padding, n_gallery, dim, k, duplicates, seed):
    rng = np.random.default_rng(seed)
    gallery, gallery_ids = gallery_with_duplicates(rng, n_gallery, dim, duplicates)
    queries = np.concatenate([unit_rows(rng, 20, dim), gallery[:5]])
    expected_ids, expected_scores = ranking_rule_top_k(queries, gallery, gallery_ids, k)
    for search in ("numpy", "faiss"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(topk, "_MAX_TABLE_PADDING", padding)
            ids, scores = top_k(queries, gallery, gallery_ids, k, cpu_searcher(gallery, search))
        assert np.array_equal(ids, expected_ids), search
        assert np.array_equal(scores, expected_scores), search  # the same bits, not merely close


@pytest.mark.parametrize("search", ["numpy", "faiss"])
def test_near_ties_below_float32_resolution_are_ordered_by_the_exact_scores(search):
    # Without the margin around the k-th float32 score, these top-k lists come out wrong for
    # about half of the seeds.
    for seed in range(12):
        rng = np.random.default_rng(seed)
        base = unit_rows(rng, 1, 48)[0]
        gallery = np.concatenate([near_duplicates(rng, base, 400), unit_rows(rng, 300, 48)])
        gallery_ids = rng.permutation(len(gallery)).astype(np.int64)
        queries = np.concatenate([base[None], unit_rows(rng, 3, 48)])
        ids, scores = top_k(queries, gallery, gallery_ids, 10, cpu_searcher(gallery, search))
        expected_ids, expected_scores = ranking_rule_top_k(queries, gallery, gallery_ids, 10)
        assert np.array_equal(ids, expected_ids) and np.array_equal(scores, expected_scores), seed


@settings(max_examples=50, deadline=None)
@given(n_pairs=st.integers(0, 50), dim=st.integers(1, 300), step=st.integers(1, 20), seed=st.integers(0, 10_000))
def test_pair_scores_are_the_bits_of_exact_scores(n_pairs, dim, step, seed):
    rng = np.random.default_rng(seed)
    queries, gallery = unit_rows(rng, 7, dim), unit_rows(rng, 11, dim)
    rows, columns = rng.integers(0, 7, n_pairs), rng.integers(0, 11, n_pairs)
    pairs = exact_pair_scores(queries, gallery, rows, columns, pairs_per_step=step)
    assert np.array_equal(pairs, exact_scores(queries[rows], gallery[columns]))


@settings(max_examples=50, deadline=None)
@given(
    n_queries=st.integers(0, 40),
    width=st.integers(0, 12),
    dim=st.integers(1, 600),
    step=st.integers(1, 20),
    seed=st.integers(0, 10_000),
)
def test_table_scores_are_the_bits_of_exact_scores(n_queries, width, dim, step, seed):
    rng = np.random.default_rng(seed)
    queries, gallery = unit_rows(rng, n_queries, dim), unit_rows(rng, 11, dim)
    columns = rng.integers(0, 11, (n_queries, width))
    table = exact_table_scores(queries, gallery, columns, queries_per_step=step)
    pairs = exact_scores(np.repeat(queries, width, axis=0), gallery[columns.ravel()])
    assert np.array_equal(table, pairs.reshape(n_queries, width))


@pytest.mark.parametrize("search", ["numpy", "faiss"])
@pytest.mark.parametrize("threads", ["1", "3", "64"])
def test_top_k_does_not_depend_on_the_threads_that_compute_it(monkeypatch, search, threads):
    # 41 queries: 64 threads leave most parts empty, 3 split them unevenly; near ties make the exact
    # rescoring decide the order.
    rng = np.random.default_rng(4)
    base = unit_rows(rng, 1, 40)[0]
    gallery = np.concatenate([near_duplicates(rng, base, 60), unit_rows(rng, 200, 40)])
    gallery_ids = rng.permutation(len(gallery)).astype(np.int64)
    queries = np.concatenate([np.repeat(base[None], 5, axis=0), unit_rows(rng, 36, 40)])
    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    ids, scores = top_k(queries, gallery, gallery_ids, 10, cpu_searcher(gallery, search))
    expected_ids, expected_scores = ranking_rule_top_k(queries, gallery, gallery_ids, 10)
    assert np.array_equal(ids, expected_ids) and np.array_equal(scores, expected_scores)


@pytest.mark.parametrize("search", ["numpy", "faiss"])
def test_tie_group_larger_than_candidates_is_resolved_by_id(search):
    # 60 identical items tie for first place: the 10 smallest ids must win,
    # although FAISS's first fetch (16 candidates) cannot hold the whole group.
    rng = np.random.default_rng(0)
    gallery = unit_rows(rng, 100, 8)
    tied = rng.permutation(100)[:60]
    gallery[tied] = gallery[tied[0]]
    gallery_ids = np.arange(100, dtype=np.int64)[::-1].copy()
    query = gallery[tied[:1]].copy()
    ids, scores = top_k(query, gallery, gallery_ids, 10, cpu_searcher(gallery, search))
    assert ids[0].tolist() == sorted(gallery_ids[tied].tolist())[:10]
    assert len(set(scores[0].tolist())) == 1


def test_order_does_not_depend_on_how_faiss_breaks_ties():
    rng = np.random.default_rng(1)
    gallery = unit_rows(rng, 30, 4)
    gallery[10:20] = gallery[0]
    ids = np.arange(30, dtype=np.int64)
    query = gallery[:1].copy()
    expected, _ = top_k(query, gallery, ids, 5, FaissSearch(gallery, "cpu"))
    shuffled, _ = top_k(query, gallery, ids, 5, ReversedTieSearch(gallery, "cpu"))
    assert shuffled.tolist() == expected.tolist() == [[0, 10, 11, 12, 13]]


class ClockedSearch:
    """A search that records the sizes of the blocks it is handed and advances `clock` by
    `seconds_per_query` for each query, so auto's timing sees exactly those costs."""

    def __init__(self, search, clock, seconds_per_query, rows_per_block):
        self.search, self.clock = search, clock
        self.seconds_per_query, self.rows_per_block = seconds_per_query, rows_per_block
        self.name, self.warms_up = search.name, search.warms_up
        self.blocks = []

    def answer(self, queries, k, margin, rank):
        self.blocks.append(len(queries))
        self.clock[0] += self.seconds_per_query * len(queries)
        self.search.answer(queries, k, margin, rank)


# 100 queries; numpy's block is 7 queries, FAISS's 30. numpy is timed on the whole of its first block, FAISS
# on the next max(timed queries, 7) queries, the first quarter untimed (a call of its own, which the clock's
# seconds do not reach); the search kept takes the rest in its own blocks.
@pytest.mark.parametrize(
    "timed_queries, faiss_seconds, kept, blocks",
    [
        (12, 0.5, "faiss", {"numpy": [7], "faiss": [3, 9, 30, 30, 21]}),
        (12, 2.0, "numpy", {"numpy": [7] * 12 + [4], "faiss": [3, 9]}),
        (5, 0.5, "faiss", {"numpy": [7], "faiss": [1, 6, 30, 30, 26]}),  # never on fewer queries than numpy
        (50, 0.5, "faiss", {"numpy": [7], "faiss": [7, 23, 30, 30, 3]}),  # nor on more than its own block
    ],
)
def test_auto_times_each_search_on_a_block_of_its_own_and_keeps_the_faster_per_query(
    monkeypatch, timed_queries, faiss_seconds, kept, blocks
):
    rng = np.random.default_rng(3)
    gallery, gallery_ids = gallery_with_duplicates(rng, 300, 16, 30)
    queries = unit_rows(rng, 100, 16)
    searcher = cpu_searcher(gallery, "auto")
    clock = [0.0]
    monkeypatch.setattr(topk.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(topk, "_TIMED_QUERIES", timed_queries)
    numpy_search, faiss_search = searcher.searches
    clocked = [ClockedSearch(numpy_search, clock, 1.0, 7), ClockedSearch(faiss_search, clock, faiss_seconds, 30)]
    searcher.searches, searcher.untimed = clocked, list(clocked)
    ids, scores = top_k(queries, gallery, gallery_ids, 10, searcher)
    assert searcher.seconds_per_query == {"numpy": 1.0, "faiss": faiss_seconds}
    assert searcher.chosen.name == kept and not searcher.uses_gpu
    assert {search.name: search.blocks for search in clocked} == blocks
    expected_ids, expected_scores = ranking_rule_top_k(queries, gallery, gallery_ids, 10)
    assert np.array_equal(ids, expected_ids) and np.array_equal(scores, expected_scores)


def test_auto_on_real_searches_names_the_faster_per_query():
    rng = np.random.default_rng(3)
    gallery = unit_rows(rng, 300, 16)
    searcher = cpu_searcher(gallery, "auto")
    assert [search.name for search in searcher.searches] == ["numpy", "faiss"]
    top_k(unit_rows(rng, 40, 16), gallery, np.arange(300), 10, searcher)
    # 40 queries fit in numpy's first block, so FAISS is never run
    assert list(searcher.seconds_per_query) == ["numpy"] and searcher.chosen.name == "numpy"


@pytest.mark.parametrize("search", SEARCH_NAMES)
@pytest.mark.parametrize("threads", ["1", "3"])
# numpy: chunks of 7 queries against 3 tiles of 66 or 67 items, or against 34 tiles of 5 or 6 items, fewer than k
@pytest.mark.parametrize("tile_width", [67, 6])
@pytest.mark.parametrize("padding", TABLE_PADDINGS)
def test_queries_in_many_blocks_give_the_same_lists(monkeypatch, search, threads, tile_width, padding):
    rng = np.random.default_rng(5)
    monkeypatch.setattr(topk, "_MAX_TABLE_PADDING", padding)
    gallery, gallery_ids = gallery_with_duplicates(rng, 200, 8, 40)
    queries = np.concatenate([unit_rows(rng, 50, 8), gallery[:20]])
    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    monkeypatch.setattr(topk, "_MIN_CHUNK_ROWS", 7)
    monkeypatch.setattr(topk, "_CHUNK_SCORE_BYTES", 4 * 7 * tile_width)
    monkeypatch.setattr(FaissSearch, "rows_per_block", 11)
    numpy_search = topk.MatmulSearch(gallery)
    assert numpy_search.rows_per_chunk == 7 and len(numpy_search.tile_bounds) - 1 == {67: 3, 6: 34}[tile_width]
    ids, scores = top_k(queries, gallery, gallery_ids, 10, cpu_searcher(gallery, search))
    expected_ids, expected_scores = ranking_rule_top_k(queries, gallery, gallery_ids, 10)
    assert np.array_equal(ids, expected_ids) and np.array_equal(scores, expected_scores)


def test_the_numpy_search_refuses_a_gpu_device():
    with pytest.raises(ClipevalError) as error:
        Searcher(np.eye(2, dtype=np.float32), "cuda", "numpy")
    assert str(error.value) == "knn search 'numpy' runs on the CPU, but knn device 'cuda' names a GPU"


@pytest.mark.parametrize("search", SEARCH_NAMES)
def test_gallery_smaller_than_k_returns_the_whole_gallery(search):
    rng = np.random.default_rng(2)
    gallery = unit_rows(rng, 3, 4)
    ids, _ = top_k(unit_rows(rng, 2, 4), gallery, np.array([7, 8, 9]), 10, cpu_searcher(gallery, search))
    assert ids.shape == (2, 3) and sorted(ids[0].tolist()) == [7, 8, 9]


def test_k_must_be_positive():
    gallery = np.eye(2, dtype=np.float32)
    with pytest.raises(ClipevalError, match="top_k must be at least 1"):
        top_k(gallery, gallery, np.array([0, 1]), 0, cpu_searcher(gallery, "numpy"))


def test_a_gpu_that_faiss_does_not_see_is_a_clear_error():
    import faiss

    gpus = faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0
    seen = f"faiss sees {gpus} GPU(s)" if gpus else "faiss sees no GPU (is faiss-gpu installed?)"
    with pytest.raises(ClipevalError) as error:
        FaissSearch(np.eye(2, dtype=np.float32), f"cuda:{gpus}")
    assert str(error.value) == f"knn device 'cuda:{gpus}' requested but {seen}"


class StandInGpuIndex:
    """A CPU flat index behind the GPU index's `search`, counting the depths asked of it: it lets the CPU
    suite run FaissSearch's GPU branch (tests/test_gpu.py runs it on a real GPU)."""

    def __init__(self, gallery):
        import faiss

        self.index = faiss.IndexFlatIP(gallery.shape[1])
        self.index.add(gallery)
        self.depths = []

    def search(self, queries, k):
        self.depths.append(k)
        return self.index.search(queries, k)


# FAISS first fetches k + _EXTRA_FETCHED neighbours; a GPU flat index answers at most _GPU_MAX_K.
DEEPEST_K_ON_THE_GPU = topk._GPU_MAX_K - topk._EXTRA_FETCHED


@pytest.mark.parametrize(
    "k, answered_by_the_index", [(10, True), (DEEPEST_K_ON_THE_GPU, True), (DEEPEST_K_ON_THE_GPU + 1, False)]
)
def test_the_gpu_branch_ranks_its_index_s_candidates_and_leaves_deeper_searches_to_the_cpu(k, answered_by_the_index):
    rng = np.random.default_rng(3)
    gallery, gallery_ids = gallery_with_duplicates(rng, topk._GPU_MAX_K + 300, 4, 400)
    queries = np.concatenate([unit_rows(rng, 6, 4), gallery[:2]])
    searcher = Searcher(gallery, "cpu", "faiss")
    stand_in = searcher.searches[0].gpu_index = StandInGpuIndex(gallery)
    assert searcher.uses_gpu
    ids, scores = top_k(queries, gallery, gallery_ids, k, searcher)
    expected_ids, expected_scores = ranking_rule_top_k(queries, gallery, gallery_ids, k)
    assert np.array_equal(ids, expected_ids) and np.array_equal(scores, expected_scores)
    assert bool(stand_in.depths) == answered_by_the_index
    assert all(depth <= topk._GPU_MAX_K for depth in stand_in.depths)


@pytest.mark.parametrize("device", ["gpu", "cuda:", "cuda:x", "cuda:-1", "CPU"])
def test_a_device_name_that_is_not_torch_s_is_refused(device):
    with pytest.raises(ClipevalError) as error:
        FaissSearch(np.eye(2, dtype=np.float32), device)
    assert str(error.value) == f"knn device {device!r}: expected auto, cpu, cuda or cuda:N"


def test_gpu_numbers_follow_torch_s_device_names():
    assert [gpu_number(d) for d in ("auto", "cpu", "cuda", "cuda:0", "cuda:3")] == [None, None, 0, 0, 3]


def test_prediction_rows_follow_the_formats():
    ids = np.array([[3, 1]])
    scores = np.array([[0.5, 0.25]])
    assert list(prediction_rows(np.array([12]), ids, scores, TEXT_TO_IMAGE)) == [
        {"text_id": 12, "image_ids": [3, 1], "scores": [0.5, 0.25]}
    ]
    assert list(prediction_rows(np.array([3]), ids, scores, IMAGE_TO_TEXT))[0]["text_ids"] == [3, 1]


def test_knn_without_a_faiss_build_says_which_to_install(tmp_path):
    from clipeval.features.feature_files import write_features

    hidden = tmp_path / "no-faiss/faiss"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('no FAISS build here')\n")
    write_features(tmp_path / "images.jsonl", "image_id", np.array([1, 2]), np.eye(2, dtype=np.float32))
    write_features(tmp_path / "texts.jsonl", "text_id", np.array([7]), np.eye(2, dtype=np.float32)[:1])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "clipeval",
            "make-topk-predictions",
            "--image-feats",
            tmp_path / "images.jsonl",
            "--text-feats",
            tmp_path / "texts.jsonl",
            "--direction",
            "t2i",
            "--output",
            tmp_path / "t2i.jsonl",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(hidden.parent)},
    )
    assert (result.returncode, result.stderr) == (
        1,
        "clipeval: error: knn needs FAISS, and no FAISS build is"
        " installed: pip install 'clipeval[cpu]', or 'clipeval[gpu]'"
        " on a CUDA host\n",
    )
    assert not (tmp_path / "t2i.jsonl").exists()
