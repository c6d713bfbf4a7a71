"""Build a model from its config entry's (arch, pretrained): the arch parsed once (models/pretrained.py) names
the backend that builds it, a module of clipeval.models imported by name, so that the code fingerprints of
the jobs that extract or encode with a model cover its own backend, not the others (codegraph.command_entry_modules).

Every backend keeps one contract, with `name` the parsed arch:

- `check_name(name)`: the model it names exists (a known model name, a complete folder), or one error;
- `check_weights(name, pretrained)`: `pretrained` is what the model takes (a tag it has, a checkpoint file that
  exists, or nothing), or one error;
- `checkpoint_misfit(name, checkpoint)`: why a checkpoint file does not fit the model, found without loading its
  weights into the model (None where it fits or the backend checks the fit as it loads), and one error where it
  is not loadable;
- `load(name, pretrained, device, precision, preprocess)`: (model in eval mode with encode_image and
  encode_text, eval preprocess of one PIL image, tokenizer of a list of captions).
"""

import importlib
from types import ModuleType

import torch

from clipeval.devices import gpu_number
from clipeval.errors import ClipevalError
from clipeval.models.pretrained import ModelName, is_checkpoint_path, parse_model_name
from clipeval.storage.digests import file_sha256, folder_sha256


def backend_of(name: ModelName) -> ModuleType:
    return importlib.import_module(f"clipeval.models.{name.backend.module}")


def check_arch(arch: str) -> None:
    name = parse_model_name(arch)
    backend_of(name).check_name(name)


def check_pretrained(arch: str, pretrained: str | None) -> None:
    name = parse_model_name(arch)
    backend_of(name).check_weights(name, pretrained)


def build_model(arch: str, pretrained: str | None, device: str = "cpu", precision: str = "fp32", preprocess=None):
    """(model in eval mode, eval preprocess, tokenizer). `preprocess` overrides an open_clip model's eval
    preprocessing: any of mean, std, interpolation, resize_mode."""
    name = parse_model_name(arch)
    return backend_of(name).load(name, pretrained, device, precision, preprocess or {})


def weights_identity(arch: str, pretrained: str | None) -> str:
    """sha256 of a local checkpoint, of the files of the folder the arch loads from (open_clip ignores
    `pretrained` then), or the open_clip tag the weights were named by."""
    folder = parse_model_name(arch).folder
    if folder is not None:
        return f"folder-sha256:{folder_sha256(folder)}"
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
        seen = (
            f"torch sees {torch.cuda.device_count()} CUDA device(s)"
            if torch.cuda.is_available()
            else "torch sees no CUDA device"
        )
        raise ClipevalError(f"device {device!r} requested but {seen}")
    return device
