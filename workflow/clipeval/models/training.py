"""Train a small CLIP with the symmetric contrastive loss.

Used by the offline demo: it gives the evaluation stages a real checkpoint
that `open_clip.create_model_and_transforms(arch, pretrained=path)` loads.
"""

import io
import math
from pathlib import Path

import numpy as np
import open_clip
import torch
import torch.nn.functional as F
from tqdm import tqdm

from clipeval.data.dataset import open_dataset
from clipeval.models import build as model_module
from clipeval.models.optimizer import PortableAdamW
from clipeval.storage.atomic import atomic_output


def contrastive_loss(image_features, text_features, logit_scale):
    """Cross-entropy both ways over the cosine-similarity matrix, averaged."""
    image_features = F.normalize(image_features, dim=-1)
    text_features = F.normalize(text_features, dim=-1)
    logits = logit_scale.exp() * image_features @ text_features.t()
    targets = torch.arange(len(logits), device=logits.device)
    return (F.cross_entropy(logits, targets) + F.cross_entropy(logits.t(), targets)) / 2


def _load_training_tensors(dataset_dir, preprocess, tokenizer):
    store, captions = open_dataset(dataset_dir)
    image_ids = store.image_ids()
    images = torch.stack([preprocess(store.image(int(i))) for i in image_ids])
    row_of_image = {int(image_id): row for row, image_id in enumerate(image_ids)}
    tokens = tokenizer(captions.texts)
    caption_rows_per_image = [[] for _ in image_ids]
    for caption_row, positives in enumerate(captions.image_ids):
        for image_id in positives:
            caption_rows_per_image[row_of_image[int(image_id)]].append(caption_row)
    has_caption = np.array([bool(rows) for rows in caption_rows_per_image])
    return images[has_caption], tokens, [rows for rows in caption_rows_per_image if rows]


def _cosine_lr(step, total_steps, warmup_steps, base_lr):
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return base_lr * 0.5 * (1 + math.cos(math.pi * progress))


def train_clip(arch, dataset_dir, output, epochs, batch_size, lr, seed, weight_decay=0.1, log=print):
    """Train `arch` from scratch on a prepared dataset and save a checkpoint at `output`."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model_module.check_arch(arch)
    model, _, preprocess = open_clip.create_model_and_transforms(arch)
    tokenizer = open_clip.get_tokenizer(arch)
    images, tokens, caption_rows = _load_training_tensors(dataset_dir, preprocess, tokenizer)

    steps_per_epoch = max(1, len(images) // batch_size)
    total_steps = epochs * steps_per_epoch
    optimizer = PortableAdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    history = []
    progress = tqdm(total=total_steps, desc="train", unit="step", mininterval=5)
    for epoch in range(epochs):
        order = rng.permutation(len(images))
        chosen_caption = np.array([rows[rng.integers(len(rows))] for rows in caption_rows])
        epoch_loss = 0.0
        for step_in_epoch in range(steps_per_epoch):
            step = epoch * steps_per_epoch + step_in_epoch
            for group in optimizer.param_groups:
                group["lr"] = _cosine_lr(step, total_steps, steps_per_epoch, lr)
            batch = order[step_in_epoch * batch_size : (step_in_epoch + 1) * batch_size]
            image_features = model.encode_image(images[batch])
            text_features = model.encode_text(tokens[chosen_caption[batch]])
            loss = contrastive_loss(image_features, text_features, model.logit_scale)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            epoch_loss += loss.item()
            progress.update(1)
        history.append(epoch_loss / steps_per_epoch)
        log(f"epoch {epoch + 1}/{epochs}: loss {history[-1]:.4f}")
    progress.close()

    model.eval()
    # Saved through a buffer: torch names the archive's records after the file
    # it writes, so the same weights saved under two names would differ in bytes.
    buffer = io.BytesIO()
    torch.save({"state_dict": model.state_dict(), "arch": arch, "epoch_losses": history}, buffer)
    with atomic_output(output) as temporary:
        Path(temporary).write_bytes(buffer.getvalue())
    return history
