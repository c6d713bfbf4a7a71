"""Build open_clip models from (arch, pretrained) with clear errors.

Importing this module registers the model configs shipped with clipeval
(for example `clipeval-tiny`) with open_clip, so they resolve by name.
"""

from importlib.resources import files
from pathlib import Path

import open_clip
from open_clip.factory import load_state_dict
import torch

from clipeval.devices import gpu_number
from clipeval.errors import ClipevalError
from clipeval.models.pretrained import is_checkpoint_path
from clipeval.reporting.provenance import file_sha256

MODEL_CONFIG_DIR = Path(str(files("clipeval.models") / "configs"))
open_clip.add_model_config(MODEL_CONFIG_DIR)

_PREPROCESS_ARGUMENTS = {
    "mean": "image_mean",
    "std": "image_std",
    "interpolation": "image_interpolation",
    "resize_mode": "image_resize_mode",
}


def check_arch(arch: str) -> None:
    if arch.startswith(("hf-hub:", "local-dir:")):
        return
    if arch not in open_clip.list_models():
        raise ClipevalError(f"unknown open_clip arch {arch!r} (see open_clip.list_models())")


def check_pretrained(arch: str, pretrained: str | None) -> None:
    if not pretrained:
        return
    if is_checkpoint_path(pretrained):
        if not Path(pretrained).is_file():
            raise ClipevalError(f"{pretrained}: checkpoint file not found (model arch {arch})")
        return
    tags = open_clip.list_pretrained_tags_by_model(arch)
    if pretrained not in tags:
        known = ", ".join(tags) or "none"
        raise ClipevalError(f"unknown pretrained tag {pretrained!r} for arch {arch!r} (known: {known})")


def _check_loadable(checkpoint: str) -> None:
    try:
        load_state_dict(checkpoint)
    except Exception as error:  # torch.load raises many types for a non-checkpoint
        raise ClipevalError(f"{checkpoint}: not a loadable checkpoint ({type(error).__name__})") from None


def build_model(arch: str, pretrained: str | None, device: str = "cpu", precision: str = "fp32", preprocess=None):
    """Return (model in eval mode, eval preprocess, tokenizer).

    `preprocess` overrides open_clip's eval preprocessing: any of mean, std,
    interpolation, resize_mode.
    """
    preprocess = preprocess or {}
    unknown = set(preprocess) - set(_PREPROCESS_ARGUMENTS)
    if unknown:
        raise ClipevalError(f"unknown preprocess option(s): {', '.join(sorted(unknown))}")
    check_arch(arch)
    check_pretrained(arch, pretrained)
    local = bool(pretrained) and is_checkpoint_path(pretrained)
    if local:
        _check_loadable(pretrained)
    try:
        model, _, transform = open_clip.create_model_and_transforms(
            arch,
            pretrained=pretrained or None,
            device=device,
            precision=precision,
            require_pretrained=bool(pretrained),
            **{_PREPROCESS_ARGUMENTS[key]: value for key, value in preprocess.items()},
        )
    except (RuntimeError, AssertionError, KeyError, ValueError) as error:  # how open_clip reports a mismatch
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if local:
            raise ClipevalError(f"{pretrained}: weights do not fit arch {arch!r}: {detail}") from None
        raise ClipevalError(f"cannot build model {arch!r} with pretrained {pretrained!r}: {detail}") from None
    model.eval()
    return model, transform, open_clip.get_tokenizer(arch)


def weights_identity(pretrained: str | None) -> str:
    """sha256 of a local checkpoint, or the open_clip tag it was named by."""
    if not pretrained:
        return "random-init"
    if is_checkpoint_path(pretrained):
        return "sha256:" + file_sha256(pretrained)
    return f"open_clip-tag:{pretrained}"


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    number = gpu_number(device)
    if number is not None and number >= torch.cuda.device_count():
        seen = f"torch sees {torch.cuda.device_count()} CUDA device(s)" if torch.cuda.is_available() \
            else "torch sees no CUDA device"
        raise ClipevalError(f"device {device!r} requested but {seen}")
    return device
