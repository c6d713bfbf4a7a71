"""Images read from the LMDB store and preprocessed in DataLoader worker processes, in id order."""

import numpy as np
import torch

from clipeval.data.image_lmdb import ImageStore


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


def image_batches(store: ImageStore, image_ids: np.ndarray, transform, *, batch_size: int, num_workers: int, device):
    """Batches of transform(image), stacked, for image_ids in order."""
    return torch.utils.data.DataLoader(
        LmdbImages(store, image_ids, transform),
        batch_size=batch_size,
        num_workers=num_workers,
        shuffle=False,
        pin_memory=torch.device(device).type == "cuda",
    )
