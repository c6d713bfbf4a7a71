import hashlib

import numpy as np
import orjson
import pytest
import torch
from conftest import collected

from clipeval.data.dataset import open_dataset
from clipeval.errors import ClipevalError
from clipeval.features import feature_files
from clipeval.features.encode import iter_image_features, iter_text_features
from clipeval.features.feature_files import check_same_dimension, read_features, sidecar_path, write_features
from clipeval.models.build import build_model
from clipeval.storage import digests


@pytest.fixture(scope="module")
def tiny(tiny_checkpoint):
    return build_model("clipeval-tiny", str(tiny_checkpoint))


def images_with(tiny, store, **options):
    model, preprocess, _ = tiny
    settings = {"batch_size": 16, "num_workers": 0, "device": "cpu", "precision": "fp32", **options}
    return collected(iter_image_features(model, preprocess, store, store.image_ids(), **settings))


def test_image_features_are_unit_rows_in_id_order_and_match_direct_encoding(tiny, shapes_dataset):
    store, _ = open_dataset(shapes_dataset)
    ids, matrix = images_with(tiny, store)
    assert ids.tolist() == list(range(10, 50))
    assert matrix.dtype == np.float32 and matrix.shape == (40, 64)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1, atol=1e-5)
    model, preprocess, _ = tiny
    with torch.no_grad():
        direct = model.encode_image(preprocess(store.image(10))[None])
    assert np.allclose(matrix[0], (direct / direct.norm()).numpy()[0], atol=1e-5)


def test_parallel_workers_give_identical_features(tiny, shapes_dataset):
    store, _ = open_dataset(shapes_dataset)
    _, serial = images_with(tiny, store, num_workers=0, batch_size=7)
    _, parallel = images_with(tiny, store, num_workers=2, batch_size=7)
    assert np.array_equal(serial, parallel)


def test_features_do_not_depend_on_how_the_images_are_split(tiny, shapes_dataset):
    # The model sees the same fixed blocks of the whole id list whatever the
    # split and the loader batch, so every split gives the same bits.
    store, _ = open_dataset(shapes_dataset)
    _, whole = images_with(tiny, store, batch_size=16)
    pieces = [
        images_with(tiny, store, batch_size=batch, start=start, stop=stop)[1]
        for (start, stop), batch in zip([(0, 3), (3, 17), (17, 40)], (5, 64, 300))
    ]
    assert np.array_equal(whole, np.concatenate(pieces))


def test_forward_blocks_line_up_with_the_whole_list():
    from clipeval.features.sharding import forward_blocks

    assert list(forward_blocks(0, 150, 150, 64)) == [0, 64, 128]
    assert list(forward_blocks(50, 100, 150, 64)) == [0, 64]
    assert list(forward_blocks(64, 128, 150, 64)) == [64]
    assert list(forward_blocks(130, 150, 150, 64)) == [128]
    assert list(forward_blocks(7, 7, 150, 64)) == []
    with pytest.raises(ValueError):
        forward_blocks(0, 151, 150, 64)


def test_a_short_block_is_padded_with_its_last_row_and_a_full_one_is_left_alone():
    import numpy as np
    import torch

    from clipeval.features.sharding import FORWARD_BLOCK, padded_block

    rows = torch.arange(6).reshape(3, 2)
    padded = padded_block(rows)
    assert padded.shape == (FORWARD_BLOCK, 2) and padded[:3].tolist() == rows.tolist()
    assert (padded[3:] == rows[-1]).all()
    full = np.zeros((FORWARD_BLOCK, 4))
    assert padded_block(full) is full


def test_shards_are_consecutive_runs_of_ids():
    from clipeval.features.sharding import shard_bounds, shard_count

    assert shard_count(10, 4) == 3
    assert [shard_bounds(10, i, 4) for i in range(3)] == [(0, 4), (4, 8), (8, 10)]
    assert shard_bounds(10, 0, 0) == (0, 10)
    with pytest.raises(ClipevalError, match="shard 1 does not exist: without a shard size there is one shard"):
        shard_bounds(10, 1, 0)
    with pytest.raises(ClipevalError, match="shard 3 does not exist: 10 images make 3 shards of 4"):
        shard_bounds(10, 3, 4)


def test_gather_keeps_order_and_refuses_overlaps(tmp_path):
    from clipeval.features.feature_files import gather_features

    matrix = np.eye(4, dtype=np.float32)
    write_features(tmp_path / "0.jsonl", "image_id", np.array([1, 2]), matrix[:2])
    write_features(tmp_path / "1.jsonl", "image_id", np.array([5, 9]), matrix[2:])
    ids, gathered = gather_features([tmp_path / "0.jsonl", tmp_path / "1.jsonl"], "image_id")
    assert ids.tolist() == [1, 2, 5, 9] and np.array_equal(gathered, matrix)
    with pytest.raises(ClipevalError, match="shards out of order or overlapping at image_id 1"):
        gather_features([tmp_path / "1.jsonl", tmp_path / "0.jsonl"], "image_id")


def test_text_features(tiny, shapes_dataset):
    model, _, tokenizer = tiny
    _, captions = open_dataset(shapes_dataset)
    ids, matrix = collected(
        iter_text_features(
            model, tokenizer, captions.text_ids, captions.texts, batch_size=64, device="cpu", precision="fp32"
        )
    )
    assert ids.tolist() == captions.text_ids.tolist()
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "amp"])
def test_reduced_precision_on_cpu_stays_close(tiny_checkpoint, shapes_dataset, precision):
    store, _ = open_dataset(shapes_dataset)
    _, full = images_with(build_model("clipeval-tiny", str(tiny_checkpoint)), store)
    _, reduced = images_with(build_model("clipeval-tiny", str(tiny_checkpoint)), store, precision=precision)
    assert reduced.dtype == np.float32
    assert (full * reduced).sum(axis=1).min() > 0.98


def test_fp16_needs_cuda(tiny, shapes_dataset):
    store, _ = open_dataset(shapes_dataset)
    with pytest.raises(ClipevalError, match="precision fp16 needs a CUDA device; use bf16 or amp on CPU"):
        images_with(tiny, store, precision="fp16")


def test_feature_file_round_trip_is_exact(tmp_path):
    matrix = np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32)
    write_features(tmp_path / "f.jsonl", "image_id", np.arange(5) * 3, matrix)
    ids, loaded = read_features(tmp_path / "f.jsonl", "image_id")
    assert ids.tolist() == [0, 3, 6, 9, 12] and np.array_equal(loaded, matrix)


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            ['{"text_id": 1, "feature": [1, 0]}', '{"text_id": 2, "feature": [1, 0, 0]}'],
            r"f\.jsonl:2: text_id 2 has dimension 3, expected 2",
        ),
        (
            ['{"text_id": 1, "feature": [1, 0]}', '{"text_id": 1, "feature": [0, 1]}'],
            r"f\.jsonl:2: duplicate text_id 1 \(first on line 1\)",
        ),
        (['{"text_id": 1, "feature": [0, 0]}'], r"f\.jsonl:1: text_id 1 has a zero-norm feature"),
        (
            ['{"text_id": 1, "feature": [1, 0]}', '{"text_id": 4, "feature": [NaN, 0]}'],
            r"f\.jsonl:2: (text_id 4 has a NaN or infinite feature value|malformed JSON line)",
        ),
        (
            ['{"text_id": 1, "feature": [1e999, 0]}'],
            r"f\.jsonl:1: (text_id 1 has a NaN or infinite feature value|malformed JSON line)",
        ),
        (
            ['{"text_id": 1, "feature": [1, 0]}', '{"text_id": 2, "feature": [1e308, 0]}'],
            r"f\.jsonl:2: text_id 2 has a NaN or infinite feature value \(or one past float32's range\)$",
        ),
        (
            ['{"text_id": 1, "feature": [1e30, 1]}'],
            r"f\.jsonl:1: text_id 1 has a feature of norm 1e\+30, past the 1\.84e\+19 at which float32 products overflow$",
        ),
        (['{"text_id": 1}'], r"f\.jsonl:1: text_id 1 has no feature list"),
        (
            ['{"text_id": 1, "feature": [1, 0]}', '{"text_id": 2, "feature": ["1.5", true]}'],
            r'f\.jsonl:2: text_id 2 has a feature value that is not a number: "1\.5"',
        ),
        (
            ['{"text_id": 1, "feature": [1.5, true]}'],
            r"f\.jsonl:1: text_id 1 has a feature value that is not a number: true",
        ),
        (
            ['{"text_id": 1, "feature": [[1.5], 2]}'],
            r"f\.jsonl:1: text_id 1 has a feature value that is not a number: \[1\.5\]",
        ),
        (['{"image_id": 1, "feature": [1]}'], r"f\.jsonl:1: text_id must be a non-negative integer, got None"),
        (
            ['{"text_id": 1, "feature": [1, 0]}', '{"text_id": 2, "feature": [' + ",".join(["0"] * 1_000_000) + "]}"],
            r"f\.jsonl:2: text_id 2 has 1,000,000 feature values, more than the 16,384 clipeval reads",
        ),
    ],
)
def test_bad_feature_files_are_named(tmp_path, lines, message):
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ClipevalError, match=message):
        read_features(path, "text_id")


def written_with_sidecar(tmp_path, monkeypatch, matrix, ids=None):
    """Features written where the workflow writes them: the results folder of the working directory."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "results/features/f.jsonl"
    path.parent.mkdir(parents=True)
    write_features(path, "image_id", np.arange(len(matrix)) if ids is None else ids, matrix)
    return path


def test_a_sidecar_beside_features_from_elsewhere_is_never_read(tmp_path, monkeypatch):
    """A sidecar's digests name its jsonl, which anyone can hash: beside a model's precomputed features one
    could hold any numbers. Outside the results folder the jsonl is parsed; there no sidecar is written."""
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "precomputed/images.jsonl"
    elsewhere.parent.mkdir()
    write_features(elsewhere, "image_id", np.arange(2), np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    assert not sidecar_path(elsewhere).exists()
    forged = tmp_path / "results/features/images.jsonl"
    forged.parent.mkdir(parents=True)
    write_features(forged, "image_id", np.arange(2), np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32))
    forged_header, _ = feature_files._sidecar_contents(forged, "image_id")
    header = {**forged_header, "jsonl_digest": feature_files._jsonl_digest(elsewhere)}
    arrays = sidecar_path(forged).read_bytes().split(b"\n", 2)[2]
    sidecar_path(elsewhere).write_bytes(feature_files._SIDECAR_MAGIC + orjson.dumps(header) + b"\n" + arrays)
    assert feature_files._read_sidecar(elsewhere, "image_id") is not None  # a sidecar that would pass its checks
    ids, matrix = read_features(elsewhere, "image_id")
    assert ids.tolist() == [0, 1] and matrix.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_sidecars_are_kept_where_the_workflow_writes_its_results():
    from clipeval.planning.artifacts import RESULTS

    assert feature_files.OWN_RESULTS == RESULTS


def test_the_sidecar_holds_exactly_what_parsing_the_file_gives(tmp_path, monkeypatch):
    # Random bit patterns: exponents up to 1e17 (a row's norm must stay below 1.84e19, where float32
    # products overflow), subnormals, negative zeros; orjson writes each float32 in its shortest form,
    # and the parse must give back the same bits the sidecar holds.
    bits = np.random.default_rng(0).integers(0, 2**32, size=(2000, 64), dtype=np.uint64).astype(np.uint32)
    matrix = bits.view(np.float32)
    matrix[~np.isfinite(matrix) | (np.abs(matrix) > 1e17)] = 1.0
    path = written_with_sidecar(tmp_path, monkeypatch, matrix)
    assert sidecar_path(path).is_file()
    read_sidecar = feature_files._read_sidecar
    monkeypatch.setattr(feature_files, "_read_sidecar", lambda *args: None)
    parsed_ids, parsed = read_features(path, "image_id")
    monkeypatch.setattr(feature_files, "_read_sidecar", read_sidecar)
    monkeypatch.setattr(feature_files, "read_keyed_jsonl", None)  # the sidecar alone answers
    ids, from_sidecar = read_features(path, "image_id")
    assert np.array_equal(ids, parsed_ids)
    assert np.array_equal(from_sidecar.view(np.uint32), parsed.view(np.uint32))
    assert np.array_equal(from_sidecar.view(np.uint32), matrix.view(np.uint32))


def edit_one_value(path):
    text = path.read_text()
    path.write_text(text.replace("0.5", "0.6", 1))


def swap_in_another_file(path):
    other = path.with_name("other.jsonl")
    write_features(other, "image_id", np.arange(3), np.full((3, 2), 0.25, dtype=np.float32))
    sidecar_path(other).replace(sidecar_path(path))


def damage_the_arrays(path):
    data = bytearray(sidecar_path(path).read_bytes())
    data[-1] ^= 1
    sidecar_path(path).write_bytes(bytes(data))


def truncate_the_sidecar(path):
    sidecar_path(path).write_bytes(sidecar_path(path).read_bytes()[:-5])


# 7-byte pieces: the files here span many pieces of their digests; 16 MiB: one each, as in use.
@pytest.mark.parametrize("piece_bytes", [7, 16 << 20])
@pytest.mark.parametrize("spoil", [edit_one_value, swap_in_another_file, damage_the_arrays, truncate_the_sidecar])
def test_a_sidecar_that_does_not_match_its_file_is_never_used(tmp_path, monkeypatch, spoil, piece_bytes):
    monkeypatch.setattr(digests, "PIECE_BYTES", piece_bytes)
    path = written_with_sidecar(
        tmp_path, monkeypatch, np.array([[0.5, 1.0], [0.25, 0.5], [1.0, 0.0]], dtype=np.float32)
    )
    spoil(path)
    expected = np.array(
        [[float(v) for v in orjson.loads(line)["feature"]] for line in path.read_text().splitlines()], dtype=np.float32
    )
    ids, matrix = read_features(path, "image_id")
    assert ids.tolist() == [0, 1, 2] and np.array_equal(matrix, expected)


def test_the_digest_is_a_sha256_over_its_pieces_in_order_whatever_the_threads(tmp_path, monkeypatch):
    monkeypatch.setattr(digests, "PIECE_BYTES", 4)
    found = {}
    for name, content in [
        ("plain", b"abcdefgh12"),
        ("pieces swapped", b"efghabcd12"),
        ("one byte more", b"abcdefgh12 "),
    ]:
        (tmp_path / name).write_bytes(content)
        for threads in ("1", "3"):
            monkeypatch.setenv("OMP_NUM_THREADS", threads)
            found[name, threads] = feature_files._jsonl_digest(tmp_path / name)
    pieces = b"".join(hashlib.sha256(piece).digest() for piece in (b"abcd", b"efgh", b"12"))
    assert found["plain", "1"] == found["plain", "3"] == hashlib.sha256((10).to_bytes(8, "little") + pieces).hexdigest()
    assert len(set(found.values())) == 3


@pytest.mark.parametrize(
    "matrix, message",
    [
        (np.array([[1.0, 0.0], [0.0, 0.0]], dtype=np.float32), r"f\.jsonl:2: image_id 1 has a zero-norm feature"),
        (
            np.ones((1, 16_385), dtype=np.float32),
            r"f\.jsonl:1: image_id 0 has 16,385 feature values, more than the 16,384 clipeval reads",
        ),
        (
            np.array([[1.0, 0.0], [3e19, 1.0]], dtype=np.float32),
            r"f\.jsonl:2: image_id 1 has a feature of norm 3e\+19, past the 1\.84e\+19 at which float32 products overflow",
        ),
    ],
)
def test_features_the_reader_would_refuse_get_no_sidecar_and_the_reader_names_the_line(
    tmp_path, monkeypatch, matrix, message
):
    path = written_with_sidecar(tmp_path, monkeypatch, matrix)
    assert not sidecar_path(path).exists()
    with pytest.raises(ClipevalError, match=message):
        read_features(path, "image_id")


def test_dimensions_must_agree():
    with pytest.raises(ClipevalError, match=r"img\.jsonl has 4-dimensional features but txt\.jsonl has 3"):
        check_same_dimension("img.jsonl", np.ones((2, 4)), "txt.jsonl", np.ones((2, 3)))
