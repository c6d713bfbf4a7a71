"""Whether a checkpoint's weights fit an arch, read from the file's header and an empty model: no weight is
loaded or computed. open_clip's own load path decides (its conversions of older and third-party layouts
included), on the meta device; what differs is said with the first keys and shapes."""

import contextlib
import logging

import open_clip
import open_clip.factory
import torch

SHOWN = 3  # keys of each kind named in a message


def meta_state_dict(path: str) -> dict:
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


# safetensors' dtype names, those torch has.
SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def _dtype(handle, key):
    name = handle.get_slice(key).get_dtype()
    if name not in SAFETENSORS_DTYPES:
        raise ValueError(f"{key} has dtype {name}, which torch cannot hold")
    return SAFETENSORS_DTYPES[name]


# The dtypes a float weight may have in a file: open_clip copies it into the model's float parameters, which
# is exact or a rounding. Any other (int8 or float8, as quantized checkpoints hold them with scales elsewhere)
# would be cast to the values of its codes, in silence.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def non_float_weights(expected: dict, given: dict) -> str | None:
    """The weights a file holds in another dtype than FLOAT_DTYPES where the arch's are floats, said with the
    first keys; None when there are none. `expected` and `given` map keys to tensors or dtypes."""
    dtype = lambda value: value if isinstance(value, torch.dtype) else value.dtype  # noqa: E731
    found = [
        f"{key} is {str(dtype(given[key])).removeprefix('torch.')}"
        for key, value in expected.items()
        if key in given and dtype(value).is_floating_point and dtype(given[key]) not in FLOAT_DTYPES
    ]
    if not found:
        return None
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return (
        f"{', '.join(found[:SHOWN])}{more} in the file, a float in the arch (quantized weights need their own"
        " loader; open_clip would cast their codes to floats)"
    )


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
    state_dict = meta_state_dict(checkpoint)
    with _loading_from(state_dict):
        try:
            open_clip.factory.load_checkpoint(model, checkpoint, device="meta")
        except (RuntimeError, AssertionError, KeyError, ValueError, AttributeError) as error:
            expected = {key: value.shape for key, value in model.state_dict().items()}
            found = differences(expected, {key: value.shape for key, value in state_dict.items()})
            return found or " ".join(str(error).split())[:500]
    return non_float_weights(model.state_dict(), state_dict)


@contextlib.contextmanager
def _loading_from(state_dict: dict):
    """open_clip's load_checkpoint, given these meta tensors instead of reading the file's."""
    original = open_clip.factory.load_state_dict
    open_clip.factory.load_state_dict = lambda *args, **kwargs: dict(state_dict)
    try:
        yield
    finally:
        open_clip.factory.load_state_dict = original


@contextlib.contextmanager
def recorded_dtypes():
    """{key: dtype} of the state dict open_clip loads inside the block, filled as it loads it."""
    original = open_clip.factory.load_state_dict
    dtypes = {}

    def recording(*args, **kwargs):
        state_dict = original(*args, **kwargs)
        dtypes.update({key: value.dtype for key, value in state_dict.items() if isinstance(value, torch.Tensor)})
        return state_dict

    open_clip.factory.load_state_dict = recording
    try:
        yield dtypes
    finally:
        open_clip.factory.load_state_dict = original
