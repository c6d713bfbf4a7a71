"""Train or fine-tune a CLIP with the symmetric contrastive loss.

From random weights (the offline demo trains so) or from weights open_clip
loads (a pretrained tag or a checkpoint): a linear warm-up then a cosine
decay, AdamW whose update is the same bits on every CPU, either tower
optionally frozen. A training may stop after any epoch and write its state
(weights, optimizer, random generators); resumed from that state, the next
epoch computes the bits an uninterrupted training would, so an epoch series
is a chain of one-epoch jobs. Every checkpoint is one that
`open_clip.create_model_and_transforms(arch, pretrained=path)` loads.
"""

import contextlib
import io
import math
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from clipeval.data.dataset import open_dataset
from clipeval.errors import ClipevalError
from clipeval.models.build import build_model, resolve_device
from clipeval.models.open_clip_models import TAG_SETTINGS_KEY, tag_settings
from clipeval.models.optimizer import PortableAdamW
from clipeval.storage.atomic import atomic_output

TOWERS = ("image", "text")
PRECISIONS = ("fp32", "bf16", "amp")


@dataclass(frozen=True)
class TrainingSettings:
    arch: str
    epochs: int
    batch_size: int
    lr: float
    seed: int
    start_from: str | None = None  # an open_clip tag or a checkpoint; None: random weights
    warmup_steps: int | None = None  # None: one epoch's steps
    weight_decay: float = 0.1
    freeze: tuple[str, ...] = ()
    precision: str = "fp32"
    device: str = "cpu"


def contrastive_loss(image_features, text_features, logit_scale):
    """Cross-entropy both ways over the cosine-similarity matrix, averaged."""
    image_features = F.normalize(image_features, dim=-1)
    text_features = F.normalize(text_features, dim=-1)
    logits = logit_scale.exp() * image_features @ text_features.t()
    targets = torch.arange(len(logits), device=logits.device)
    return (F.cross_entropy(logits, targets) + F.cross_entropy(logits.t(), targets)) / 2


# The most memory the training set's preprocessed images may take held whole; a larger set (Flickr30k's 29,000
# training images are 17 GB at 224 pixels) is preprocessed a batch at a time, to the same tensors.
HELD_IMAGES_BYTES = 4 << 30


class TrainingImages:
    """The preprocessed images of a dataset's captioned images, by row."""

    def __init__(self, store, image_ids, preprocess):
        self.store, self.image_ids, self.preprocess = store, image_ids, preprocess
        first = preprocess(store.image(int(image_ids[0])))
        self.held = None
        if first.numel() * first.element_size() * len(image_ids) <= HELD_IMAGES_BYTES:
            self.held = torch.stack([first, *(self._image(row) for row in range(1, len(image_ids)))])
            store.close()  # LMDB allows one open environment a file in a process

    def __len__(self):
        return len(self.image_ids)

    def _image(self, row):
        return self.preprocess(self.store.image(int(self.image_ids[row])))

    def close(self):
        self.store.close()

    def batch(self, rows) -> torch.Tensor:
        if self.held is not None:
            return self.held[rows]
        return torch.stack([self._image(row) for row in rows])


def _load_training_tensors(dataset_dir, preprocess, tokenizer):
    store, captions = open_dataset(dataset_dir)
    image_ids = store.image_ids()
    row_of_image = {int(image_id): row for row, image_id in enumerate(image_ids)}
    tokens = tokenizer(captions.texts)
    caption_rows_per_image = [[] for _ in image_ids]
    for caption_row, positives in enumerate(captions.image_ids):
        for image_id in positives:
            caption_rows_per_image[row_of_image[int(image_id)]].append(caption_row)
    captioned = [row for row, rows in enumerate(caption_rows_per_image) if rows]
    if not captioned:
        raise ClipevalError(f"{dataset_dir}: no image has a caption to train on")
    images = TrainingImages(store, [image_ids[row] for row in captioned], preprocess)
    return images, tokens, [caption_rows_per_image[row] for row in captioned]


def _cosine_lr(step, total_steps, warmup_steps, base_lr):
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return base_lr * 0.5 * (1 + math.cos(math.pi * progress))


def freeze_towers(model, towers) -> None:
    """Keep the named towers' weights as they are (open_clip's LiT-style locks)."""
    unknown = set(towers) - set(TOWERS)
    if unknown:
        raise ClipevalError(f"no tower {sorted(unknown)[0]!r} to freeze (towers: {', '.join(TOWERS)})")
    if "image" in towers:
        model.lock_image_tower()
    if "text" in towers:
        model.lock_text_tower()


def train_mode(model, towers) -> None:
    """Training mode, but a frozen image tower's batch norms keep their running statistics (a ResNet's would
    follow the training batches, and change the frozen tower's features)."""
    model.train()
    if "image" in towers:
        for module in model.visual.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.eval()


def autocast(precision: str, device: str):
    """fp32: none; bf16: bfloat16 autocast; amp: float16 autocast on a GPU, bfloat16 on a CPU."""
    if precision not in PRECISIONS:
        raise ClipevalError(f"unknown training precision {precision!r} (known: {', '.join(PRECISIONS)})")
    if precision == "fp32":
        return contextlib.nullcontext()
    kind = "cuda" if device.startswith("cuda") else "cpu"
    dtype = torch.float16 if precision == "amp" and kind == "cuda" else torch.bfloat16
    return torch.autocast(kind, dtype=dtype)


def train_clip(
    settings: TrainingSettings, dataset_dir, output, stop_after=None, resume=None, state_output=None, log=print
):
    """Train on a prepared dataset up to epoch `stop_after` (default: the last), from the state a run stopped at
    the epoch before wrote (`resume`), and save a checkpoint at `output` (and this run's state at
    `state_output`). Returns every epoch's mean loss so far."""
    stop_after = settings.epochs if stop_after is None else stop_after
    if not 1 <= stop_after <= settings.epochs:
        raise ClipevalError(f"epoch {stop_after} is not one of the training's {settings.epochs}")
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    device = resolve_device(settings.device)
    # Built from the start's weights even where resumed weights replace them: a tag also sets the model's
    # activation and preprocessing (open_clip_models.tag_settings), which every epoch keeps.
    model, preprocess, tokenizer = build_model(settings.arch, settings.start_from, device=device)
    carried = tag_settings(settings.arch, settings.start_from)
    freeze_towers(model, settings.freeze)
    optimizer = PortableAdamW(
        [parameter for parameter in model.parameters() if parameter.requires_grad],
        lr=settings.lr,
        weight_decay=settings.weight_decay,
    )
    scaler = torch.amp.GradScaler("cuda", enabled=settings.precision == "amp" and device.startswith("cuda"))
    history = []
    if resume:
        history = _resumed(resume, model, optimizer, scaler, rng, device)
        if len(history) != stop_after - 1:
            raise ClipevalError(f"{resume}: a state after epoch {len(history)}, not after epoch {stop_after - 1}")
    images, tokens, caption_rows = _load_training_tensors(dataset_dir, preprocess, tokenizer)

    steps_per_epoch = max(1, len(images) // settings.batch_size)
    total_steps = settings.epochs * steps_per_epoch
    warmup_steps = steps_per_epoch if settings.warmup_steps is None else settings.warmup_steps
    train_mode(model, settings.freeze)
    progress = tqdm(total=(stop_after - len(history)) * steps_per_epoch, desc="train", unit="step", mininterval=5)
    for epoch in range(len(history), stop_after):
        order = rng.permutation(len(images))
        chosen_caption = np.array([rows[rng.integers(len(rows))] for rows in caption_rows])
        epoch_loss = 0.0
        for step_in_epoch in range(steps_per_epoch):
            step = epoch * steps_per_epoch + step_in_epoch
            for group in optimizer.param_groups:
                group["lr"] = _cosine_lr(step, total_steps, warmup_steps, settings.lr)
            batch = order[step_in_epoch * settings.batch_size : (step_in_epoch + 1) * settings.batch_size]
            with autocast(settings.precision, device):
                image_features = model.encode_image(images.batch(batch).to(device))
                text_features = model.encode_text(tokens[chosen_caption[batch]].to(device))
                loss = contrastive_loss(image_features.float(), text_features.float(), model.logit_scale)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            epoch_loss += loss.item()
            progress.update(1)
        history.append(epoch_loss / steps_per_epoch)
        log(f"epoch {epoch + 1}/{settings.epochs}: loss {history[-1]:.4f}")
    progress.close()
    images.close()

    model.eval()
    checkpoint = {"state_dict": _on_cpu(model.state_dict()), "arch": settings.arch, "epoch_losses": history}
    _save({**checkpoint, TAG_SETTINGS_KEY: carried} if carried else checkpoint, output)
    if state_output is not None:
        state = {
            "model": _on_cpu(model.state_dict()),
            "optimizer": _on_cpu(optimizer.state_dict()),
            "scaler": scaler.state_dict(),
            "numpy_rng": rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if device.startswith("cuda") else [],
            "epoch_losses": history,
        }
        _save(state, state_output)
    return history


def _resumed(path, model, optimizer, scaler, rng, device) -> list[float]:
    """Load a stopped run's state into this one; its epochs' losses."""
    try:
        # On the CPU, where the random generators' states belong; the weights and moments move to the model's.
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if state["scaler"]:
            scaler.load_state_dict(state["scaler"])
        rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] and device.startswith("cuda"):
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        return list(state["epoch_losses"])
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, pickle.UnpicklingError) as error:
        raise ClipevalError(f"{path}: not a training state to resume from ({type(error).__name__})") from None


def _on_cpu(value):
    """A state's tensors on the CPU, so that a checkpoint loads on a machine without the GPU it came from; a
    state already there is returned as it is (its type and metadata are part of the checkpoint's bytes)."""
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, dict):
        moved = type(value)((key, _on_cpu(item)) for key, item in value.items())
        if hasattr(value, "_metadata"):
            moved._metadata = value._metadata
        return moved
    if isinstance(value, list):
        return [_on_cpu(item) for item in value]
    return value


def _save(content: dict, output) -> None:
    # Saved through a buffer: torch names the archive's records after the file
    # it writes, so the same weights saved under two names would differ in bytes.
    buffer = io.BytesIO()
    torch.save(content, buffer)
    with atomic_output(output) as temporary:
        Path(temporary).write_bytes(buffer.getvalue())
