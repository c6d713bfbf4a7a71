"""Encode images and captions with an open_clip model into L2-normalised features."""

import contextlib

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from .errors import ClipevalError
from .imagestore import ImageStore

PRECISIONS = ("fp32", "fp16", "bf16", "amp")


class LmdbImages(torch.utils.data.Dataset):
    """Images read by key from the LMDB store; each DataLoader worker opens its own handle."""

    def __init__(self, store: ImageStore, image_ids: np.ndarray, transform):
        self.store = store
        self.image_ids = image_ids
        self.transform = transform

    def __len__(self):
        return len(self.image_ids)

    def __getitem__(self, index):
        return self.transform(self.store.image(int(self.image_ids[index])))


def prepare_model_for_precision(model, precision: str, device: str):
    """Cast the model for `precision`; return (model, input dtype, autocast context factory)."""
    if precision not in PRECISIONS:
        raise ClipevalError(f"unknown precision {precision!r} (choose from {', '.join(PRECISIONS)})")
    device_type = torch.device(device).type
    if precision == "fp16":
        if device_type != "cuda":
            raise ClipevalError("precision fp16 needs a CUDA device; use bf16 or amp on CPU")
        return model.half(), torch.float16, contextlib.nullcontext
    if precision == "bf16":
        return model.to(torch.bfloat16), torch.bfloat16, contextlib.nullcontext
    if precision == "amp":
        amp_dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        return model, torch.float32, lambda: torch.autocast(device_type=device_type, dtype=amp_dtype)
    return model, torch.float32, contextlib.nullcontext


def _normalised(features: torch.Tensor) -> np.ndarray:
    return F.normalize(features.float(), dim=-1).cpu().numpy()


def _check_finite(matrix: np.ndarray, ids: np.ndarray, what: str, precision: str) -> None:
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = ids[int(np.argmin(finite))]
        raise ClipevalError(f"{what} {bad}: the model produced NaN or infinite features at precision {precision}")


def encode_images(model, preprocess, store: ImageStore, *, batch_size, num_workers, device, precision):
    """Return (image ids ascending, float32 matrix of unit rows)."""
    image_ids = store.image_ids()
    model, input_dtype, autocast = prepare_model_for_precision(model, precision, device)
    loader = torch.utils.data.DataLoader(
        LmdbImages(store, image_ids, preprocess),
        batch_size=batch_size,
        num_workers=num_workers,
        shuffle=False,
        pin_memory=torch.device(device).type == "cuda",
        persistent_workers=False,
    )
    chunks = []
    with torch.inference_mode(), autocast():
        for batch in tqdm(loader, desc="images", unit="batch", mininterval=5):
            features = model.encode_image(batch.to(device, dtype=input_dtype, non_blocking=True))
            chunks.append(_normalised(features))
    matrix = np.concatenate(chunks)
    _check_finite(matrix, image_ids, "image_id", precision)
    return image_ids, matrix


def encode_texts(model, tokenizer, text_ids: np.ndarray, texts: list[str], *, batch_size, device, precision):
    """Return (text ids in file order, float32 matrix of unit rows)."""
    model, _, autocast = prepare_model_for_precision(model, precision, device)
    chunks = []
    with torch.inference_mode(), autocast():
        for start in tqdm(range(0, len(texts), batch_size), desc="texts", unit="batch", mininterval=5):
            tokens = tokenizer(texts[start:start + batch_size]).to(device)
            chunks.append(_normalised(model.encode_text(tokens)))
    matrix = np.concatenate(chunks)
    _check_finite(matrix, text_ids, "text_id", precision)
    return text_ids, matrix
