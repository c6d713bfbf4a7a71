"""Encode images and captions with an open_clip model into L2-normalised features."""

import contextlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from clipeval.data.image_lmdb import ImageStore
from clipeval.errors import ClipevalError
from clipeval.features.image_loader import image_batches
from clipeval.features.pixels import device_normalize, host_block, model_input, split_transform
from clipeval.features.sharding import FORWARD_BLOCK, block_span, padded_block
from clipeval.features.text_span import WINDOW, unit_caption_features

PRECISIONS = ("fp32", "fp16", "bf16", "amp")
# Blocks of stored pixels read ahead of the model (by READERS threads: a copy releases the GIL), and blocks a
# GPU may still be computing when the host asks for a block's rows: enough that neither the reading nor the
# host's kernel launches leave the GPU waiting.
READ_AHEAD = 3
READERS = 2
IN_FLIGHT = 3


def check_precision(precision: str, device: str) -> None:
    """A precision that cannot run on the device stops here, in one line."""
    if precision not in PRECISIONS:
        raise ClipevalError(f"unknown precision {precision!r} (choose from {', '.join(PRECISIONS)})")
    if precision == "fp16" and torch.device(device).type != "cuda":
        raise ClipevalError("precision fp16 needs a CUDA device; use bf16 or amp on CPU")


def prepare_model_for_precision(model, precision: str, device: str):
    """Cast the model for `precision`; return (model, input dtype, autocast context factory)."""
    check_precision(precision, device)
    device_type = torch.device(device).type
    if precision == "fp16":
        return model.half(), torch.float16, contextlib.nullcontext
    if precision == "bf16":
        return model.to(torch.bfloat16), torch.bfloat16, contextlib.nullcontext
    if precision == "amp":
        amp_dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        return model, torch.float32, lambda: torch.autocast(device_type=device_type, dtype=amp_dtype)
    return model, torch.float32, contextlib.nullcontext


def _check_finite(matrix: np.ndarray, ids: np.ndarray, what: str, precision: str) -> None:
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = ids[int(np.argmin(finite))]
        raise ClipevalError(f"{what} {bad}: the model produced NaN or infinite features at precision {precision}")


def _blocks_per_batch(batch_size: int) -> int:
    return max(1, -(-batch_size // FORWARD_BLOCK))


def _decoded_blocks(store, image_ids, preprocess, *, batch_size, num_workers, device, dtype):
    """Blocks of the model's input, each image decoded and preprocessed by `preprocess` in loader workers."""
    batches = image_batches(
        store,
        image_ids,
        preprocess,
        batch_size=FORWARD_BLOCK * _blocks_per_batch(batch_size),
        num_workers=num_workers,
        device=device,
    )
    for batch in batches:
        for block in batch.split(FORWARD_BLOCK):
            yield block.to(device, dtype=dtype, non_blocking=True)


def _lagged(items, lag: int):
    """`items` in order, each handed on only once `lag` more have been made (or the items have run out): what
    making an item starts (a read, GPU kernels) runs on while the consumer deals with earlier ones."""
    waiting = deque()
    for item in items:
        waiting.append(item)
        if len(waiting) > lag:
            yield waiting.popleft()
    yield from waiting


def _stored_blocks(pixels, normalize, first, last, *, device, dtype):
    """Blocks of the model's input made from stored pixels (features/pixels.py): the same bits. The next
    blocks are read in threads while the model computes this one."""
    on_gpu = torch.device(device).type == "cuda"
    normalize = device_normalize(normalize, device)
    # Copies to the GPU on a stream of their own run beside the model's kernels rather than between them.
    upload = torch.cuda.Stream(device) if on_gpu else None

    def read_into(block, position):
        np.copyto(block.numpy(), pixels.rows(position, position + len(block)))
        return block

    def empty_block(position):
        return host_block(min(FORWARD_BLOCK, last - position), pixels.row_shape, on_gpu)

    with ThreadPoolExecutor(max_workers=READERS) as reader:
        reads = (
            reader.submit(read_into, empty_block(position), position) for position in range(first, last, FORWARD_BLOCK)
        )
        for rows in _lagged(reads, READ_AHEAD):
            yield model_input(_on_device(rows.result(), device, upload), normalize, device, dtype)


def _on_device(rows, device, upload):
    """`rows` copied to `device`; on a GPU through the stream `upload`, which the model's stream then waits for."""
    if upload is None:
        return rows
    with torch.cuda.stream(upload):
        copied = rows.to(device, non_blocking=True)
    compute = torch.cuda.current_stream(device)
    compute.wait_stream(upload)
    copied.record_stream(compute)  # its memory is not reused until the model's stream is done with it
    return copied


def _unit_rows_on_host(model, blocks, device):
    """(block length, float32 unit rows as numpy) per block. On a GPU each block's rows come back IN_FLIGHT
    blocks late: the following blocks' kernels are queued before the host waits for this block's copy, so
    the GPU does not idle while the host prepares the next input or launches the next kernels."""
    on_gpu = torch.device(device).type == "cuda"

    def queued():
        for block in blocks:
            # All 64 rows are normalised, as a row's bits may depend on the shape it is computed in.
            unit = F.normalize(model.encode_image(padded_block(block)).float(), dim=-1)
            copy = unit.to("cpu", non_blocking=on_gpu)
            done = torch.cuda.Event() if on_gpu else None
            if done is not None:
                done.record()
            yield len(block), copy, done

    for pending in _lagged(queued(), IN_FLIGHT if on_gpu else 0):
        yield _finished(*pending)


def _finished(length, copy, done):
    if done is not None:
        done.synchronize()
    return length, copy.numpy()[:length]


def iter_image_features(
    model,
    preprocess,
    store: ImageStore,
    image_ids,
    *,
    start=0,
    stop=None,
    batch_size,
    num_workers,
    device,
    precision,
    pixels=None,
):
    """Yield (ids, float32 unit rows) for image_ids[start:stop], in order.

    `image_ids` is the dataset's whole ascending id list, so that blocks line
    up the same way for every shard. Blocks that straddle [start, stop) are
    computed whole and trimmed. With `pixels` (StoredPixels of the model's
    recipe) the images are not decoded again: only ToTensor's scaling and
    `preprocess`'s Normalize are applied to them.
    """
    stop = len(image_ids) if stop is None else stop
    first, last = block_span(start, stop, len(image_ids))
    model, input_dtype, autocast = prepare_model_for_precision(model, precision, device)
    if pixels is None:
        blocks = _decoded_blocks(
            store,
            image_ids[first:last],
            preprocess,
            batch_size=batch_size,
            num_workers=num_workers,
            device=device,
            dtype=input_dtype,
        )
    else:
        blocks = _stored_blocks(pixels, split_transform(preprocess)[1], first, last, device=device, dtype=input_dtype)
    position = first
    with torch.inference_mode(), autocast():
        for length, matrix in _unit_rows_on_host(
            model, tqdm(blocks, desc="images", unit="block", mininterval=5), device
        ):
            keep = slice(max(start - position, 0), min(stop - position, length))
            ids = image_ids[position : position + length][keep]
            position += length
            if len(ids):
                _check_finite(matrix[keep], ids, "image_id", precision)
                yield ids, matrix[keep]


def iter_text_features(model, tokenizer, text_ids: np.ndarray, texts: list[str], *, batch_size, device, precision):
    """Yield (ids, float32 unit rows) window by window, in file order.

    Captions go through the model in fixed blocks of FORWARD_BLOCK, like
    images, so `batch_size` changes nothing here; each block only as far as
    its longest caption reaches, to the full context's bits, and made of
    captions of like length (features/text_span.py).
    """
    model, _, autocast = prepare_model_for_precision(model, precision, device)
    progress = tqdm(total=len(texts), desc="texts", unit="caption", mininterval=5)
    with torch.inference_mode(), autocast(), progress:
        for start in range(0, len(texts), WINDOW):
            tokens = tokenizer(texts[start : start + WINDOW])
            matrix = unit_caption_features(model, tokens.to(device)).cpu().numpy()
            ids = text_ids[start : start + len(tokens)]
            _check_finite(matrix, ids, "text_id", precision)
            progress.update(len(tokens))
            yield ids, matrix


def encode_texts(model, tokenizer, text_ids, texts, **options):
    """(text_ids, float32 matrix of unit rows): every text at once, for a set small enough to hold (class
    prompts)."""
    parts = list(iter_text_features(model, tokenizer, text_ids, texts, **options))
    return np.concatenate([ids for ids, _ in parts]), np.concatenate([matrix for _, matrix in parts])
