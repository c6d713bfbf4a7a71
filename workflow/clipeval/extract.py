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


def _padded(batch: torch.Tensor, size: int) -> torch.Tensor:
    """Repeat the last row up to `size` rows.

    Matrix kernels pick their code path by batch shape, and small shapes round
    differently. Encoding every batch at one shape makes an item's features
    independent of where batches and shards happen to split.
    """
    missing = size - len(batch)
    if missing <= 0:
        return batch
    return torch.cat([batch, batch[-1:].expand(missing, *batch.shape[1:])])


def _normalised(features: torch.Tensor) -> np.ndarray:
    return F.normalize(features.float(), dim=-1).cpu().numpy()


def _check_finite(matrix: np.ndarray, ids: np.ndarray, what: str, precision: str) -> None:
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = ids[int(np.argmin(finite))]
        raise ClipevalError(f"{what} {bad}: the model produced NaN or infinite features at precision {precision}")


def iter_image_features(model, preprocess, store: ImageStore, image_ids, *, batch_size, num_workers, device, precision):
    """Yield (ids, float32 unit rows) batch by batch, in the order of `image_ids`."""
    model, input_dtype, autocast = prepare_model_for_precision(model, precision, device)
    loader = torch.utils.data.DataLoader(
        LmdbImages(store, image_ids, preprocess),
        batch_size=batch_size,
        num_workers=num_workers,
        shuffle=False,
        pin_memory=torch.device(device).type == "cuda",
    )
    start = 0
    with torch.inference_mode(), autocast():
        for batch in tqdm(loader, desc="images", unit="batch", mininterval=5):
            padded = _padded(batch, batch_size).to(device, dtype=input_dtype, non_blocking=True)
            matrix = _normalised(model.encode_image(padded))[:len(batch)]
            ids = image_ids[start:start + len(batch)]
            _check_finite(matrix, ids, "image_id", precision)
            start += len(batch)
            yield ids, matrix


def iter_text_features(model, tokenizer, text_ids: np.ndarray, texts: list[str], *, batch_size, device, precision):
    """Yield (ids, float32 unit rows) batch by batch, in file order."""
    model, _, autocast = prepare_model_for_precision(model, precision, device)
    with torch.inference_mode(), autocast():
        for start in tqdm(range(0, len(texts), batch_size), desc="texts", unit="batch", mininterval=5):
            tokens = tokenizer(texts[start:start + batch_size])
            matrix = _normalised(model.encode_text(_padded(tokens, batch_size).to(device)))[:len(tokens)]
            ids = text_ids[start:start + len(tokens)]
            _check_finite(matrix, ids, "text_id", precision)
            yield ids, matrix


def _collect(batches) -> tuple[np.ndarray, np.ndarray]:
    parts = list(batches)
    return np.concatenate([ids for ids, _ in parts]), np.concatenate([matrix for _, matrix in parts])


def encode_images(model, preprocess, store, image_ids, **options):
    """(image_ids, float32 matrix of unit rows)."""
    return _collect(iter_image_features(model, preprocess, store, image_ids, **options))


def encode_texts(model, tokenizer, text_ids, texts, **options):
    """(text_ids, float32 matrix of unit rows)."""
    return _collect(iter_text_features(model, tokenizer, text_ids, texts, **options))
