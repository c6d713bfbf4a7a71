"""Chinese-CLIP's own models (`cn-clip:NAME` with a checkpoint): a random RN50@RBT3 checkpoint saved as
Chinese-CLIP saves one, clipeval's features from the file against cn_clip's own forward pass of the model saved
(its preprocessing, its tokenizer at context length 52), and the config's problems in one line."""

import json

import numpy as np
import pytest
from conftest import run_cli

from clipeval.models.model_check import model_problem

pytestmark = pytest.mark.minutes(2)

pytest.importorskip("cn_clip", reason="cn_clip is installed by `make` without its dependencies")


def write_rn50_checkpoint(path):
    """A random RN50@RBT3-chinese as Chinese-CLIP's training saves it: {"epoch", "step", "name", "state_dict"}
    with the DistributedDataParallel `module.` prefix, weights in fp16 (create_model converts them). Returns the
    model, in float32 as cn_clip's load_from_name leaves it on the CPU."""
    import contextlib
    import io

    import torch
    from cn_clip.clip.utils import create_model

    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()):
        model = create_model("RN50@RBT3-chinese")
    state = {f"module.{key}": value for key, value in model.state_dict().items()}
    torch.save({"epoch": 1, "step": 10, "name": "random", "state_dict": state}, path)
    return model.float().eval()


def cn_clip_features(model, images, texts):
    """Unit features as Chinese-CLIP's own evaluation computes them: its preprocess, tokenize and forward pass."""
    import torch
    from cn_clip.clip import image_transform, tokenize

    preprocess = image_transform(224)
    with torch.inference_mode():
        image_features = model.encode_image(torch.stack([preprocess(image) for image in images]))
        text_features = model.encode_text(tokenize(texts, context_length=52))
    return [torch.nn.functional.normalize(f, dim=-1).numpy() for f in (image_features, text_features)]


@pytest.mark.workflow  # builds a 77M-parameter model twice: too slow for `make test-fast`
def test_features_are_cn_clip_s_own(tmp_path):
    from clipeval.data.dataset import write_dataset
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.data.sources import PreparedSource
    from clipeval.data.sources.shapes import generate_shapes
    from clipeval.storage.jsonl import read_jsonl

    # Few images and captions: a block of 64 rows costs the same, the reference's own batch less.
    shapes_dataset = tmp_path / "shapes"
    images, captions, _ = generate_shapes(6, seed=5)
    write_dataset(shapes_dataset, PreparedSource(images, captions, {"format": "shapes"}))
    checkpoint = tmp_path / "clip_cn_rn50.pt"
    model = write_rn50_checkpoint(checkpoint)
    result = run_cli(
        "extract-features", "--arch", "cn-clip:RN50", "--pretrained", checkpoint,
        "--images", shapes_dataset / "images.lmdb", "--texts", shapes_dataset / "texts.jsonl",
        "--image-output", tmp_path / "images.jsonl", "--text-output", tmp_path / "texts.jsonl",
        "--device", "cpu", "--num-workers", "0",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = {kind: [json.loads(line) for line in open(tmp_path / f"{kind}.jsonl")] for kind in ("images", "texts")}
    store = ImageStore(shapes_dataset / "images.lmdb")
    captions = {row["text_id"]: row["text"] for _, row in read_jsonl(shapes_dataset / "texts.jsonl")}
    images = [store.image(row["image_id"]) for row in rows["images"]]
    texts = [captions[row["text_id"]] for row in rows["texts"]]
    expected_images, expected_texts = cn_clip_features(model, images, texts)
    # Blocks of 64 against one batch: other kernel shapes, so equal to float32's rounding, not to the bit.
    np.testing.assert_allclose([row["feature"] for row in rows["images"]], expected_images, atol=2e-6)
    np.testing.assert_allclose([row["feature"] for row in rows["texts"]], expected_texts, atol=2e-6)


def test_a_chinese_clip_model_s_problems_are_named_in_one_line(tmp_path):
    checkpoint = tmp_path / "clip_cn_rn50.pt"
    assert model_problem("cn", "cn-clip:RN51", str(checkpoint), "fp32", "extract.precision", None) == (
        "models.cn.arch: unknown Chinese-CLIP model 'RN51' (known: ViT-B-16, ViT-L-14, ViT-L-14-336, ViT-H-14, RN50)"
    )
    assert model_problem("cn", "cn-clip:RN50", "", "fp32", "extract.precision", None) == (
        "models.cn.pretrained: a Chinese-CLIP model needs its checkpoint file (pretrained: clip_cn_rn50.pt)"
    )
    assert model_problem("cn", "cn-clip:RN50", str(checkpoint), "fp32", "extract.precision", None) == (
        f"models.cn.pretrained: {checkpoint}: checkpoint file not found (Chinese-CLIP model RN50)"
    )
    checkpoint.write_bytes(b"not a checkpoint")
    assert model_problem("cn", "cn-clip:RN50", str(checkpoint), "fp32", "extract.precision", None) == (
        f"models.cn.pretrained: {checkpoint}: not a loadable checkpoint (UnpicklingError)"
    )
