"""Images decoded, resized and cropped once, for every model that preprocesses them alike.

open_clip's eval preprocessing is PIL steps (resize; crop, or pad; convert
to RGB) followed by ToTensor and Normalize. The PIL steps decide a uint8
image. What follows is elementwise float arithmetic (a division by 255, a
subtraction, a division), each step correctly rounded, so it gives the same
bits on a batch as on one image, on any device. The uint8 images are
therefore made once per dataset and *recipe* (what decides them: image
size, resize mode, interpolation, fill colour) and every model with that
recipe reads them.
"""

import re

import numpy as np

from clipeval.errors import ClipevalError

RESIZE_MODES = ("shortest", "longest", "squash")
INTERPOLATIONS = ("bicubic", "bilinear", "random")
RECIPE_PATTERN = rf"[0-9]+x[0-9]+-(?:{'|'.join(RESIZE_MODES)})-(?:{'|'.join(INTERPOLATIONS)})-fill[0-9]+"
_RECIPE = re.compile(r"([0-9]+)x([0-9]+)-(\w+)-(\w+)-fill([0-9]+)")


def recipe_key(preprocess_cfg: dict) -> str | None:
    """The recipe of an open_clip preprocess config as a name, e.g. `224x224-shortest-bicubic-fill0`; None for
    a config whose pixels are not plain RGB of one size (no pixel stage for that model)."""
    size = preprocess_cfg.get("size")
    size = (size, size) if isinstance(size, int) else size
    fill = preprocess_cfg.get("fill_color", 0)
    if preprocess_cfg.get("mode", "RGB") != "RGB" or not isinstance(fill, int) or isinstance(fill, bool):
        return None
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        return None
    key = f"{size[0]}x{size[1]}-{preprocess_cfg.get('resize_mode')}-{preprocess_cfg.get('interpolation')}-fill{fill}"
    return key if re.fullmatch(RECIPE_PATTERN, key) else None


def recipe_of(key: str) -> dict:
    """A recipe name read back into open_clip's image_transform arguments."""
    match = _RECIPE.fullmatch(key) if re.fullmatch(RECIPE_PATTERN, key) else None
    if match is None:
        raise ClipevalError(f"{key!r} is not a pixel recipe (like 224x224-shortest-bicubic-fill0)")
    height, width, resize_mode, interpolation, fill = match.groups()
    return {
        "image_size": (int(height), int(width)),
        "resize_mode": resize_mode,
        "interpolation": interpolation,
        "fill_color": int(fill),
    }


def split_transform(transform):
    """(the PIL steps as one callable, the Normalize step) of an open_clip eval transform, or None for one of
    another shape."""
    from torchvision.transforms import Compose, Normalize, ToTensor

    steps = list(getattr(transform, "transforms", []))
    if len(steps) < 3 or not isinstance(steps[-2], ToTensor) or not isinstance(steps[-1], Normalize):
        return None
    return Compose(steps[:-2]), steps[-1]


def recipe_steps(key: str):
    """The PIL steps of a recipe, made by open_clip's own eval transform."""
    from open_clip.transform import image_transform

    return split_transform(image_transform(is_train=False, **recipe_of(key)))[0]


def _signature(steps) -> list:
    """What each PIL step is and holds (its type and public attributes), to tell two step lists apart."""
    return [
        (type(step).__qualname__, sorted((name, repr(value)) for name, value in vars(step).items() if name[0] != "_"))
        for step in steps.transforms
    ]


def model_recipe(preprocess_cfg: dict, transform) -> str | None:
    """The recipe of a model whose eval transform has exactly the PIL steps its recipe makes; None otherwise."""
    key = recipe_key(preprocess_cfg)
    split = split_transform(transform)
    if key is None or split is None:
        return None
    return key if _signature(split[0]) == _signature(recipe_steps(key)) else None


class ArrayOf:
    """PIL steps whose result is returned as a uint8 height × width × 3 array (picklable for loader workers)."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, image) -> np.ndarray:
        return np.array(self.steps(image), dtype=np.uint8)  # a copy: PIL's own buffer is read-only


def host_block(rows: int, row_shape: tuple, pin: bool):
    """An empty uint8 tensor for a block of stored rows (memory-mapped rows are read-only), pinned for an
    asynchronous copy to a GPU. Pinned rows are copied once, straight into page-locked memory: at a GPU's fp16
    speed a second copy of each block on the host is what the GPU would wait for. Called on the thread that
    drives the GPU: page-locked memory is taken from the CUDA driver, never from a reader thread."""
    import torch

    return torch.empty((rows, *row_shape), dtype=torch.uint8, pin_memory=pin)


def device_normalize(normalize, device: str):
    """torchvision's Normalize step as the same two operations (subtract the mean, divide by the std, channel by
    channel, in float32), its mean and std moved to `device` once. torchvision's own moves them on every call,
    and checks the std there: each is a copy or a read that waits until the GPU has finished all queued work,
    so the host could not queue the next blocks while the model runs."""
    import torch

    mean, std = (
        torch.tensor(values, dtype=torch.float32, device=device).view(-1, 1, 1)
        for values in (normalize.mean, normalize.std)
    )
    return lambda batch: batch.sub_(mean).div_(std)


def model_input(rows, normalize, device: str, dtype):
    """A tensor of uint8 pixel rows (n × height × width × 3) as the model's input: ToTensor's division by 255
    and `normalize` (device_normalize), on `device`, the same bits as the transform gives image by image."""
    import torch

    # Channels first and contiguous, as ToTensor leaves them: a convolution over another memory layout takes
    # other kernels, with other bits.
    batch = rows.to(device, non_blocking=True).permute(0, 3, 1, 2).contiguous().to(torch.float32)
    # Divided by a tensor on the device, not by the number 255: CUDA divides by a number as a multiplication
    # by its reciprocal, which differs in the last bit from the CPU's true division that ToTensor does.
    return normalize(batch / torch.full((1, 1, 1, 1), 255.0, device=batch.device)).to(dtype)
