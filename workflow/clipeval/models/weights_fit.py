"""Whether a checkpoint's weights fit an arch, read from the file's header and an empty model: no weight is
loaded or computed. open_clip's own load path decides (its conversions of older and third-party layouts
included), on the meta device; what differs is said with the first keys and shapes."""

import contextlib
import logging

import open_clip
import open_clip.factory
import torch

SHOWN = 3  # keys of each kind named in a message


def _meta_state_dict(path: str) -> dict:
    """The checkpoint's tensors as meta tensors of their shapes and dtypes, unwrapped as open_clip unwraps them
    (its own reader, for torch files; safetensors cannot load to the meta device, so its header is read)."""
    if not path.endswith(".safetensors"):
        return open_clip.factory.load_state_dict(path, device="meta")
    from safetensors import safe_open

    with safe_open(path, framework="pt") as handle:
        return {
            key: torch.empty(handle.get_slice(key).get_shape(), device="meta", dtype=_dtype(handle, key))
            for key in handle.keys()
        }


def _dtype(handle, key):
    names = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
    return names.get(handle.get_slice(key).get_dtype(), torch.float32)


def empty_model(arch: str, **options):
    """The arch's model on the meta device: its parameters' names and shapes, nothing allocated or loaded.
    `options` go to open_clip.create_model (a pretrained tag, whose config it reads, preprocessing overrides)."""
    logging.disable(logging.WARNING)  # "initialized randomly": true of an empty shell, and beside the point
    try:
        with torch.device("meta"):
            return open_clip.create_model(arch, device="meta", load_weights=False, pretrained_text=False, **options)
    finally:
        logging.disable(logging.NOTSET)


def differences(expected: dict, given: dict) -> str:
    """The first keys and shapes that differ between an arch's parameters and a checkpoint's, {key: shape}."""
    missing = [key for key in expected if key not in given]
    unexpected = [key for key in given if key not in expected]
    shapes = [
        f"{key} {list(given[key])} in the file, {list(expected[key])} in the arch"
        for key in expected
        if key in given and tuple(given[key]) != tuple(expected[key])
    ]
    parts = []
    for label, items in (("missing from the file", missing), ("not in the arch", unexpected), ("shapes", shapes)):
        if items:
            more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
            parts.append(f"{label}: {(', ' if label != 'shapes' else '; ').join(items[:SHOWN])}{more}")
    return "; ".join(parts)


def weights_misfit(arch: str, checkpoint: str) -> str | None:
    """None when open_clip would load the checkpoint into the arch; else what does not fit."""
    model = empty_model(arch)
    state_dict = _meta_state_dict(checkpoint)
    with _loading_from(state_dict):
        try:
            open_clip.factory.load_checkpoint(model, checkpoint, device="meta")
        except (RuntimeError, AssertionError, KeyError, ValueError, AttributeError) as error:
            expected = {key: value.shape for key, value in model.state_dict().items()}
            found = differences(expected, {key: value.shape for key, value in state_dict.items()})
            return found or " ".join(str(error).split())[:500]
    return None


@contextlib.contextmanager
def _loading_from(state_dict: dict):
    """open_clip's load_checkpoint, given these meta tensors instead of reading the file's."""
    original = open_clip.factory.load_state_dict
    open_clip.factory.load_state_dict = lambda *args, **kwargs: dict(state_dict)
    try:
        yield
    finally:
        open_clip.factory.load_state_dict = original
