"""The open_clip backend: models open_clip builds, by its model names, `local-dir:DIR` and `hf-hub:ORG/REPO`, with
an open_clip tag, a checkpoint file or no weights (random), each problem one clear line.

Importing this module registers the model configs shipped with clipeval
(for example `clipeval-tiny`) with open_clip, so they resolve by name.
"""

import contextlib
import logging
import sys
import zipfile
from importlib.resources import files
from pathlib import Path

import numpy as np
import open_clip
import torch
from torch.utils.serialization import config as serialization_config

from clipeval.errors import ClipevalError, first_line
from clipeval.models.pretrained import ModelName, is_checkpoint_path
from clipeval.models.weights_fit import meta_state_dict, non_float_weights, recorded_dtypes, weights_misfit

MODEL_CONFIG_DIR = Path(str(files("clipeval.models") / "configs"))
open_clip.add_model_config(MODEL_CONFIG_DIR)

PREPROCESS_ARGUMENTS = {
    "mean": "image_mean",
    "std": "image_std",
    "interpolation": "image_interpolation",
    "resize_mode": "image_resize_mode",
}


def check_name(name: ModelName) -> None:
    """An open_clip model name it knows; a folder's (local-dir:, hf-hub:) is read when it is built."""
    if name.scheme.folder is None and name.arch not in open_clip.list_models():
        raise ClipevalError(f"unknown open_clip arch {name.arch!r} (see open_clip.list_models())")


def check_weights(name: ModelName, pretrained: str | None) -> None:
    """A checkpoint file that exists, or a tag open_clip has for the model; none gives random weights."""
    if not pretrained:
        return
    if is_checkpoint_path(pretrained):
        if not Path(pretrained).is_file():
            raise ClipevalError(f"{pretrained}: checkpoint file not found (model arch {name.arch})")
        return
    tags = open_clip.list_pretrained_tags_by_model(name.arch)
    if pretrained not in tags:
        known = ", ".join(tags) or "none"
        raise ClipevalError(f"unknown pretrained tag {pretrained!r} for arch {name.arch!r} (known: {known})")


# open_clip reads a .npz as Google big_vision weights (SigLIP's own release)
# with numpy, not torch.load, into a model whose towers have big_vision's
# layout; any other suffix is a torch or safetensors checkpoint.
BIG_VISION_SUFFIX = ".npz"


def _check_numeric_arrays(archive_path: str) -> None:
    """Every member of a .npz is a .npy of numbers, read from its header alone (no array is loaded)."""
    with zipfile.ZipFile(archive_path) as archive:
        members = [name for name in archive.namelist() if not name.endswith("/")]
        if not members:
            raise ValueError("no arrays")
        for name in members:
            with archive.open(name) as member:
                major, _ = np.lib.format.read_magic(member)
                read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
                _, _, dtype = read_header(member)
            if dtype.hasobject:
                raise ClipevalError(f"{archive_path}: array {name} holds Python objects, not weights")


def check_loadable(checkpoint: str) -> None:
    """That the file reads as a checkpoint, its tensors read to the meta device: their bytes are left in the file
    (reading them too cost a job a second or more on a ViT-B-32's 600 MB, and the build reads them again)."""
    try:
        if checkpoint.endswith(BIG_VISION_SUFFIX):
            _check_numeric_arrays(checkpoint)
        else:
            meta_state_dict(checkpoint)
    except ClipevalError:
        raise
    except Exception as error:  # torch.load, zipfile and numpy raise many types for a non-checkpoint
        raise ClipevalError(f"{checkpoint}: not a loadable checkpoint ({type(error).__name__})") from None


def checkpoint_misfit(name: ModelName, checkpoint: str) -> str | None:
    """What keeps a loadable checkpoint from the model (missing or extra tensors, other shapes), read without
    loading it into a model; a checkpoint that is not loadable is one error."""
    check_loadable(checkpoint)
    # A folder's model loads its own weights, and big_vision arrays are copied in by name, not by a strict load.
    if name.scheme.folder is not None or checkpoint.endswith(BIG_VISION_SUFFIX):
        return None
    try:
        return weights_misfit(name.arch, checkpoint)
    except OSError as error:  # a text tower's config (transformers) neither cached nor downloadable
        detail = first_line(error)
        raise ClipevalError(f"cannot build arch {name.arch!r} to check {checkpoint} against it: {detail}") from None


# torch.nn.init's in-place initialisers, through which module constructors
# (and open_clip's init_parameters) draw their random weights.
_INITIALISERS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
)


def _leave_unchanged(tensor, *args, **kwargs):
    return tensor


@contextlib.contextmanager
def _random_init_skipped():
    """Build modules without drawing their random weights, for a model whose checkpoint then sets every one.

    open_clip loads a full checkpoint with strict=True, which fails unless it
    holds every parameter and buffer that the state dict has, so no drawn value
    survives the load: drawing them would be wasted work.
    """
    replaced = _initialiser_references()
    for namespace, name, _ in replaced:
        namespace[name] = _leave_unchanged
    try:
        yield
    finally:
        for namespace, name, initialiser in replaced:
            namespace[name] = initialiser


def _initialiser_references() -> list[tuple[dict, str, object]]:
    """(namespace, name, initialiser): torch.nn.init's initialisers, and each one a module imported by its name
    (torch's MultiheadAttention calls its own xavier_uniform_: 0.4 s of a ViT-B-32's build)."""
    initialisers = {name: getattr(torch.nn.init, name) for name in _INITIALISERS}
    found = []
    for module in list(sys.modules.values()):
        # The namespace, not getattr: a lazy module (transformers') imports on an attribute it lacks.
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            found += [(namespace, name, value) for name, value in initialisers.items() if namespace.get(name) is value]
    return found


@contextlib.contextmanager
def _zip_checkpoints_mapped():
    """open_clip's checkpoint reads map a torch zip archive into memory rather than copy it in: the model's
    weights are then copied once, from the file's pages (a ViT-B-32's build took half the time). Older torch
    files cannot be mapped and are read as before."""
    original = open_clip.factory.load_state_dict

    def reading(checkpoint_path, *args, **kwargs):
        if not zipfile.is_zipfile(checkpoint_path):
            return original(checkpoint_path, *args, **kwargs)
        saved = serialization_config.load.mmap
        serialization_config.load.mmap = True
        try:
            return original(checkpoint_path, *args, **kwargs)
        finally:
            serialization_config.load.mmap = saved

    open_clip.factory.load_state_dict = reading
    try:
        yield
    finally:
        open_clip.factory.load_state_dict = original


class _DownloadFailureLeftToTheError(logging.Filter):
    """open_clip logs a failed download at ERROR, then raises with the same text: the error says it once."""

    def filter(self, record):
        return not record.getMessage().startswith("Failed to download")


@contextlib.contextmanager
def _download_failures_said_once():
    root, quiet = logging.getLogger(), _DownloadFailureLeftToTheError()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


# What an open_clip tag sets beyond its arch's config (open_clip's pretrained config): a checkpoint clipeval
# fine-tuned from the tag keeps them under this key, and is built with them (models/training.py).
TAG_SETTINGS_KEY = "open_clip_tag_settings"
TAG_SETTINGS = ("quick_gelu", *PREPROCESS_ARGUMENTS)


def tag_settings(arch: str, pretrained: str | None) -> dict:
    """QuickGELU and the preprocessing the weights were trained with, where they are not the arch's own: those of
    an open_clip tag, or those a checkpoint fine-tuned from one carries."""
    if not pretrained or pretrained.endswith(BIG_VISION_SUFFIX):
        return {}
    if is_checkpoint_path(pretrained):
        try:
            checkpoint = torch.load(pretrained, map_location="cpu", weights_only=True, mmap=True)
        except Exception:  # not a zip archive (mmap needs one), or not loadable: check_loadable says which
            return {}
        carried = checkpoint.get(TAG_SETTINGS_KEY) if isinstance(checkpoint, dict) else None
        return dict(carried) if isinstance(carried, dict) else {}
    config = open_clip.get_pretrained_cfg(arch, pretrained) or {}
    return {key: config[key] for key in TAG_SETTINGS if key in config}


def carried_settings(arch: str, pretrained: str | None) -> dict:
    """The tag settings a local checkpoint carries (tag_settings); none for a tag, which open_clip applies."""
    return tag_settings(arch, pretrained) if pretrained and is_checkpoint_path(pretrained) else {}


def with_carried_preprocessing(carried: dict, preprocess: dict) -> dict:
    """A model's preprocessing overrides, over those its checkpoint carries."""
    return {**{key: carried[key] for key in PREPROCESS_ARGUMENTS if key in carried}, **preprocess}


def load(name: ModelName, pretrained: str | None, device: str, precision: str, preprocess: dict):
    """(model in eval mode, eval preprocess, tokenizer). `preprocess` overrides open_clip's eval preprocessing:
    any of mean, std, interpolation, resize_mode."""
    unknown = set(preprocess) - set(PREPROCESS_ARGUMENTS)
    if unknown:
        raise ClipevalError(f"unknown preprocess option(s): {', '.join(sorted(unknown))}")
    arch = name.arch
    check_name(name)
    check_weights(name, pretrained)
    local = bool(pretrained) and is_checkpoint_path(pretrained)
    if local:
        check_loadable(pretrained)
    carried = carried_settings(arch, pretrained)
    preprocess = with_carried_preprocessing(carried, preprocess)
    # big_vision weights are copied in tensor by tensor, not by a strict load
    loads_every_weight = bool(pretrained) and not pretrained.endswith(BIG_VISION_SUFFIX)
    try:
        with (
            _random_init_skipped() if loads_every_weight else contextlib.nullcontext(),
            _download_failures_said_once(),
            _zip_checkpoints_mapped(),
            recorded_dtypes() as loaded,
        ):
            model, _, transform = open_clip.create_model_and_transforms(
                arch,
                pretrained=pretrained or None,
                device=device,
                precision=precision,
                require_pretrained=bool(pretrained),
                force_quick_gelu=bool(carried.get("quick_gelu")),
                **{PREPROCESS_ARGUMENTS[key]: value for key, value in preprocess.items()},
            )
    except OSError as error:  # a download that failed, or a file the Hugging Face cache does not hold
        from huggingface_hub.constants import HF_HUB_CACHE

        detail = first_line(error)
        raise ClipevalError(
            f"cannot build model {arch!r} with pretrained {pretrained!r}: a file it needs is not in the Hugging"
            f" Face cache ({HF_HUB_CACHE}) and could not be downloaded: {detail}"
        ) from None
    except (
        RuntimeError,
        AssertionError,
        KeyError,
        ValueError,
        AttributeError,
    ) as error:  # how open_clip reports a mismatch
        # (AttributeError: big_vision weights for a model without big_vision's towers)
        detail = first_line(error)
        if local and pretrained.endswith(BIG_VISION_SUFFIX) and isinstance(error, AttributeError):
            raise ClipevalError(
                f"{pretrained}: weights do not fit arch {arch!r}: open_clip loads .npz (big_vision)"
                f" weights only into SigLIP-style models ({detail})"
            ) from None
        if local:
            misfit = weights_misfit(arch, pretrained) or detail
            raise ClipevalError(f"{pretrained}: weights do not fit arch {arch!r}: {misfit}") from None
        raise ClipevalError(f"cannot build model {arch!r} with pretrained {pretrained!r}: {detail}") from None
    cast = non_float_weights(model.state_dict(), loaded) if local else None
    if cast:
        raise ClipevalError(f"{pretrained}: weights do not fit arch {arch!r}: {cast}")
    model.eval()
    return model, transform, open_clip.get_tokenizer(arch)
