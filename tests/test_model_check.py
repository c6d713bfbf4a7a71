"""Models checked before any job runs: arch, pretrained tag, a checkpoint's fit (from its header, against an
empty model), precision on the device; each problem one line naming the config key."""

import open_clip
import pytest
import torch

from clipeval.models.build import build_model
from clipeval.models.model_check import model_problem
from clipeval.models.weights_fit import differences, weights_misfit


def test_differences_name_the_first_missing_unexpected_and_reshaped_keys():
    expected = {f"k{i}": (2, i) for i in range(6)}
    given = {"k0": (2, 0), "k1": (3, 1), "x": (1,), "k5": (2, 5)}
    assert differences(expected, given) == (
        "missing from the file: k2, k3, k4; not in the arch: x; shapes: k1 [3, 1] in the file, [2, 1] in the arch"
    )
    many = {f"m{i}": (1,) for i in range(5)}
    assert differences(many, {}) == "missing from the file: m0, m1, m2 and 2 more"
    assert differences(expected, expected) == ""


@pytest.fixture(scope="module")
def tiny_weights():
    from clipeval.models import open_clip_models  # noqa: F401  registers clipeval-tiny with open_clip

    return open_clip.create_model("clipeval-tiny").state_dict()


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_a_checkpoint_of_the_arch_fits_and_an_altered_one_says_what_differs(tmp_path, tiny_weights, suffix):
    from safetensors.torch import save_file

    def saved(state_dict, name):
        path = tmp_path / f"{name}{suffix}"
        if suffix == ".pt":
            torch.save({"state_dict": state_dict, "epoch": 3}, path)  # open_clip's training checkpoint
        else:
            save_file(state_dict, str(path))
        return str(path)

    assert weights_misfit("clipeval-tiny", saved(tiny_weights, "same")) is None
    altered = {key: value for key, value in tiny_weights.items() if key != "logit_scale"}
    altered["text_projection"] = torch.zeros(3, 5)
    altered["extra.weight"] = torch.zeros(1)
    path = saved(altered, "altered")
    misfit = (
        "missing from the file: logit_scale; not in the arch: extra.weight;"
        " shapes: text_projection [3, 5] in the file, [64, 64] in the arch"
    )
    assert weights_misfit("clipeval-tiny", path) == misfit
    assert model_problem("mine", "clipeval-tiny", path, "fp32", "extract.precision", "cpu") == (
        f"models.mine.pretrained: {path}: weights do not fit arch 'clipeval-tiny': {misfit}"
    )
    # The weights a fine-tune starts from are named by their own key.
    assert model_problem(
        "mine", "clipeval-tiny", path, "fp32", "extract.precision", "cpu", "models.mine.train.from"
    ) == (f"models.mine.train.from: {path}: weights do not fit arch 'clipeval-tiny': {misfit}")
    assert model_problem(
        "mine", "clipeval-tiny", "opnai", "fp32", "extract.precision", "cpu", "models.mine.train.from"
    ) == ("models.mine.train.from: unknown pretrained tag 'opnai' for arch 'clipeval-tiny' (known: none)")
    with pytest.raises(Exception) as error:  # a job that builds it anyway says the same
        build_model("clipeval-tiny", path)
    assert str(error.value) == f"{path}: weights do not fit arch 'clipeval-tiny': {misfit}"


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_quantized_weights_are_refused_not_cast_to_floats(tmp_path, tiny_weights, suffix):
    """int8 codes copied into float parameters are other weights: open_clip loads them without a word."""
    from safetensors.torch import save_file

    quantized = dict(tiny_weights)
    for key in ("positional_embedding", "text_projection", "logit_scale", "visual.conv1.weight"):
        quantized[key] = torch.ones_like(tiny_weights[key], dtype=torch.int8)
    path = tmp_path / f"int8{suffix}"
    if suffix == ".pt":
        torch.save({"state_dict": quantized}, path)
    else:
        save_file(quantized, str(path))
    said = weights_misfit("clipeval-tiny", str(path))
    assert said.endswith(
        " and 1 more in the file, a float in the arch (quantized weights need their own loader; open_clip would"
        " cast their codes to floats)"
    )
    assert said.count("is int8") == 3
    with pytest.raises(Exception) as error:  # a job that builds it anyway refuses it too
        build_model("clipeval-tiny", str(path))
    assert str(error.value).startswith(f"{path}: weights do not fit arch 'clipeval-tiny': ")
    assert str(error.value).endswith("open_clip would cast their codes to floats)")


def test_an_unknown_arch_tag_precision_or_device_is_one_line_naming_its_key():
    assert model_problem("m", "ViT-B-99", None, "fp32", "extract.precision", "cpu") == (
        "models.m.arch: unknown open_clip arch 'ViT-B-99' (see open_clip.list_models())"
    )
    assert model_problem("m", "ViT-B-32", "laion2b", "fp32", "extract.precision", "cpu").startswith(
        "models.m.pretrained: unknown pretrained tag 'laion2b' for arch 'ViT-B-32' (known: openai, "
    )
    assert model_problem("m", "clipeval-tiny", None, "fp16", "models.m.precision", "cpu") == (
        "models.m.precision: precision fp16 needs a CUDA device; use bf16 or amp on CPU"
    )
    assert model_problem("m", "clipeval-tiny", None, "fp16", "extract.precision", None) is None  # device unchecked
    assert model_problem("m", "clipeval-tiny", None, "bf16", "extract.precision", "cpu") is None
    if not torch.cuda.is_available():
        assert model_problem("m", "clipeval-tiny", None, "fp32", "extract.precision", "cuda:1") == (
            "extract.device: device 'cuda:1' requested but torch sees no CUDA device"
        )
        assert model_problem("m", "clipeval-tiny", None, "fp16", "extract.precision", "auto") == (
            "extract.precision: precision fp16 needs a CUDA device; use bf16 or amp on CPU"
        )


def test_an_arch_whose_text_tower_config_is_not_cached_is_named_with_the_checkpoint(
    tmp_path, tiny_weights, monkeypatch
):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    path = tmp_path / "w.pt"
    torch.save(tiny_weights, path)
    problem = model_problem("m", "xlm-roberta-base-ViT-B-32", str(path), "fp32", "extract.precision", None)
    assert problem.startswith(f"models.m.pretrained: cannot build arch 'xlm-roberta-base-ViT-B-32' to check {path}")
