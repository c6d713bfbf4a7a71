"""Encode images and captions with an open_clip model into L2-normalised features."""

import contextlib

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from clipeval.data.image_lmdb import ImageStore
from clipeval.errors import ClipevalError

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


FORWARD_BLOCK = 64


def forward_blocks(start: int, stop: int, total: int, block: int = FORWARD_BLOCK) -> range:
    """Positions where the blocks covering [start, stop) begin.

    The model always sees the same blocks: block b holds positions
    [b·block, (b+1)·block) of the whole ordered item list, the last one
    padded. Kernels round by the shape of their input and by a row's place
    in it, so an item computed in the same block at the same place gives the
    same bits however shards and loader batches fall (docs/REPRODUCIBILITY.md).
    """
    if not 0 <= start <= stop <= total:
        raise ValueError(f"rows [{start}, {stop}) are not within {total} items")
    return range(start // block * block, stop if stop > start else 0, block)


def _padded(batch: torch.Tensor, size: int) -> torch.Tensor:
    """Repeat the last row up to `size` rows (only the list's final block is short)."""
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


def _blocks_per_batch(batch_size: int) -> int:
    return max(1, -(-batch_size // FORWARD_BLOCK))


def iter_image_features(
    model, preprocess, store: ImageStore, image_ids, *, start=0, stop=None, batch_size, num_workers, device, precision
):
    """Yield (ids, float32 unit rows) for image_ids[start:stop], in order.

    `image_ids` is the dataset's whole ascending id list, so that blocks line
    up the same way for every shard. Blocks that straddle [start, stop) are
    computed whole and trimmed.
    """
    stop = len(image_ids) if stop is None else stop
    blocks = forward_blocks(start, stop, len(image_ids))
    first, last = blocks.start, min(len(image_ids), blocks.start + len(blocks) * FORWARD_BLOCK)
    model, input_dtype, autocast = prepare_model_for_precision(model, precision, device)
    loader = torch.utils.data.DataLoader(
        LmdbImages(store, image_ids[first:last], preprocess),
        batch_size=FORWARD_BLOCK * _blocks_per_batch(batch_size),
        num_workers=num_workers,
        shuffle=False,
        pin_memory=torch.device(device).type == "cuda",
    )
    position = first
    with torch.inference_mode(), autocast():
        for batch in tqdm(loader, desc="images", unit="batch", mininterval=5):
            for block in batch.split(FORWARD_BLOCK):
                padded = _padded(block, FORWARD_BLOCK).to(device, dtype=input_dtype, non_blocking=True)
                matrix = _normalised(model.encode_image(padded))[: len(block)]
                keep = slice(max(start - position, 0), min(stop - position, len(block)))
                ids = image_ids[position : position + len(block)][keep]
                position += len(block)
                if len(ids):
                    _check_finite(matrix[keep], ids, "image_id", precision)
                    yield ids, matrix[keep]


def iter_text_features(model, tokenizer, text_ids: np.ndarray, texts: list[str], *, batch_size, device, precision):
    """Yield (ids, float32 unit rows) block by block, in file order.

    Captions go through the model in the same fixed blocks as images, so
    `batch_size` changes nothing here.
    """
    model, _, autocast = prepare_model_for_precision(model, precision, device)
    with torch.inference_mode(), autocast():
        for start in tqdm(forward_blocks(0, len(texts), len(texts)), desc="texts", unit="block", mininterval=5):
            tokens = tokenizer(texts[start : start + FORWARD_BLOCK])
            matrix = _normalised(model.encode_text(_padded(tokens, FORWARD_BLOCK).to(device)))[: len(tokens)]
            ids = text_ids[start : start + len(tokens)]
            _check_finite(matrix, ids, "text_id", precision)
            yield ids, matrix


def encode_texts(model, tokenizer, text_ids, texts, **options):
    """(text_ids, float32 matrix of unit rows): every text at once, for a set small enough to hold (class
    prompts)."""
    parts = list(iter_text_features(model, tokenizer, text_ids, texts, **options))
    return np.concatenate([ids for ids, _ in parts]), np.concatenate([matrix for _, matrix in parts])
