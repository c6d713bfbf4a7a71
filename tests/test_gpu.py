"""The GPU paths against the CPU: extraction on CUDA, knn on a FAISS GPU index.

Each test needs its device and is skipped with the reason elsewhere (the
machines that run CI have no GPU). docs/CLUSTER_AND_GPU.md says how to
install the stack these tests need and what they promise.
"""

import numpy as np
import pytest
import torch
from conftest import extract_with_tiny, run_cli

from clipeval.features.feature_files import read_features
from clipeval.retrieval.topk import Searcher, top_k


def faiss_gpu_count():
    import faiss

    return faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
needs_faiss_gpu = pytest.mark.skipif(
    faiss_gpu_count() == 0, reason="faiss sees no GPU (no GPU here, or faiss-cpu installed instead of faiss-gpu)"
)

# fp32 features on a GPU are not the CPU's bits (other kernels, other
# summation orders) but agree with them to this much in every component of
# a unit vector; half-precision ones point the same way to this cosine.
FP32_TOLERANCE = 1e-4
HALF_PRECISION_MIN_COSINE = 0.99
# Each command here takes seconds on a GPU: one that runs past this has hung, and fails showing where (run_cli).
GPU_COMMAND_SECONDS = 60


def unit_rows(rng, n, d):
    rows = rng.normal(size=(n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@needs_faiss_gpu
@pytest.mark.parametrize("k", [1, 10, 100, 3000])  # 3000: beyond what a FAISS GPU flat index answers
def test_gpu_top_k_equals_cpu_top_k_under_the_ranking_rule(k):
    rng = np.random.default_rng(0)
    gallery = unit_rows(rng, 5000, 64)
    gallery[2500:2600] = gallery[:100]  # exact duplicates: ties that the ranking rule orders by id
    gallery_ids = rng.permutation(1_000_000)[:5000]
    queries = np.concatenate([unit_rows(rng, 300, 64), gallery[:50]])
    gpu = Searcher(gallery, "cuda")
    assert gpu.uses_gpu
    on_gpu = top_k(queries, gallery, gallery_ids, k, gpu)
    on_cpu = top_k(queries, gallery, gallery_ids, k, Searcher(gallery, "cpu", "numpy"))
    assert np.array_equal(on_gpu[0], on_cpu[0])
    assert np.array_equal(on_gpu[1], on_cpu[1])


@needs_faiss_gpu
def test_auto_searches_on_the_gpu():
    assert Searcher(np.eye(4, dtype=np.float32), "auto").uses_gpu


def extract(tiny_checkpoint, shapes_dataset, out, device, precision, num_workers=2):
    result = extract_with_tiny(
        tiny_checkpoint,
        *("--images", shapes_dataset / "images.lmdb", "--texts", shapes_dataset / "texts.jsonl"),
        *("--image-output", out / "images.jsonl", "--text-output", out / "texts.jsonl"),
        *("--num-workers", num_workers, "--batch-size", 16, "--device", device, "--precision", precision),
        timeout=GPU_COMMAND_SECONDS,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {
        side: read_features(out / f"{side}.jsonl", key) for side, key in (("images", "image_id"), ("texts", "text_id"))
    }


@pytest.fixture(scope="module")
def cpu_features(tiny_checkpoint, shapes_dataset, tmp_path_factory):
    return extract(tiny_checkpoint, shapes_dataset, tmp_path_factory.mktemp("cpu"), "cpu", "fp32")


@needs_cuda
def test_fp32_features_on_cuda_agree_with_the_cpu(tiny_checkpoint, shapes_dataset, cpu_features, tmp_path):
    on_gpu = extract(tiny_checkpoint, shapes_dataset, tmp_path, "cuda", "fp32")
    for side, (ids, matrix) in cpu_features.items():
        gpu_ids, gpu_matrix = on_gpu[side]
        assert np.array_equal(gpu_ids, ids)
        assert np.abs(gpu_matrix - matrix).max() <= FP32_TOLERANCE, side


@needs_cuda
@pytest.mark.parametrize("precision", ["fp16", "amp", "bf16"])
def test_half_precision_on_cuda_points_where_fp32_does(
    tiny_checkpoint, shapes_dataset, cpu_features, tmp_path, precision
):
    on_gpu = extract(tiny_checkpoint, shapes_dataset, tmp_path, "cuda", precision)
    for side, (ids, matrix) in cpu_features.items():
        gpu_ids, gpu_matrix = on_gpu[side]
        assert np.array_equal(gpu_ids, ids)
        cosines = np.sum(gpu_matrix.astype(np.float64) * matrix, axis=1)
        assert cosines.min() >= HALF_PRECISION_MIN_COSINE, (side, precision, cosines.min())


@needs_faiss_gpu
def test_knn_writes_the_same_bytes_on_gpu_and_cpu(tiny_checkpoint, shapes_dataset, tmp_path):
    """The knn command on each device, from the same features: identical predictions, hence identical metrics."""
    feats = tmp_path / "feats"
    extract(tiny_checkpoint, shapes_dataset, feats, "cpu", "fp32")
    written = {}
    for device in ("cpu", "cuda"):
        for direction in ("t2i", "i2t"):
            output = tmp_path / device / f"{direction}.jsonl"
            result = run_cli(
                "make-topk-predictions",
                "--image-feats",
                feats / "images.jsonl",
                "--text-feats",
                feats / "texts.jsonl",
                "--top-k",
                10,
                "--direction",
                direction,
                "--output",
                output,
                "--device",
                device,
                timeout=GPU_COMMAND_SECONDS,
            )
            assert result.returncode == 0, result.stderr[-3000:]
            assert ("(faiss search on the GPU" if device == "cuda" else "search on the CPU") in result.stdout
            written[device, direction] = output.read_bytes()
    for direction in ("t2i", "i2t"):
        assert written["cuda", direction] == written["cpu", direction]


@needs_cuda
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_stored_pixels_give_the_bits_of_decoding_on_cuda(tiny_checkpoint, shapes_dataset, tmp_path, precision):
    """The pixel stage's uint8 images are scaled and normalised on the GPU: the same input bits as the CPU's
    transform makes, hence the same features as extraction that decodes the images."""
    images = shapes_dataset / "images.lmdb"
    pixels = tmp_path / "pixels"
    result = run_cli(
        "decode-pixels",
        *("--images", images, "--recipe", "64x64-shortest-bicubic-fill0", "--output", pixels),
        timeout=GPU_COMMAND_SECONDS,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    written = {}
    for name, pixel_options in (("decoded", []), ("stored", ["--pixels", pixels])):
        output = tmp_path / f"{name}.jsonl"
        result = extract_with_tiny(
            tiny_checkpoint,
            *("--images", images, "--image-output", output, "--device", "cuda", "--precision", precision),
            *pixel_options,
            timeout=GPU_COMMAND_SECONDS,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        written[name] = output.read_bytes()
    assert written["stored"] == written["decoded"]


@needs_cuda
@pytest.mark.parametrize("precision", ["fp32", "amp", "bf16"])
def test_a_fine_tune_on_cuda_resumes_to_its_own_bits_and_saves_weights_a_cpu_loads(
    tiny_checkpoint, shapes_dataset, tmp_path, precision
):
    """`clipeval train --device cuda`: an epoch resumed from the state the one before left continues the same
    training (fp16 with loss scaling under amp), and the checkpoint loads on the CPU. Bits are not compared: CUDA's
    backward passes add in an order of their own (an embedding's gradient with atomics)."""
    common = (
        "train", "--arch", "clipeval-tiny", "--dataset", shapes_dataset, "--epochs", 2, "--batch-size", 20,
        "--lr", "1e-3", "--seed", 1, "--from", tiny_checkpoint, "--device", "cuda", "--precision", precision,
        "--numerics", "native",
    )  # fmt: skip
    runs = (
        ("--output", tmp_path / "at-once.pt"),
        ("--output", tmp_path / "1.pt", "--stop-after", 1, "--state-output", tmp_path / "1.state"),
        ("--output", tmp_path / "2.pt", "--stop-after", 2, "--resume", tmp_path / "1.state"),
    )
    for options in runs:
        result = run_cli(*common, *options, timeout=GPU_COMMAND_SECONDS)
        assert result.returncode == 0, result.stderr[-3000:]
    at_once = torch.load(tmp_path / "at-once.pt", map_location="cpu", weights_only=True)["state_dict"]
    resumed = torch.load(tmp_path / "2.pt", weights_only=True)["state_dict"]  # no map_location: saved on the CPU
    assert all(tensor.device.type == "cpu" for tensor in resumed.values())
    for name, tensor in resumed.items():
        assert not tensor.is_floating_point() or torch.isfinite(tensor).all(), name
        assert torch.allclose(tensor, at_once[name], rtol=1e-2, atol=1e-3), name
