"""Top-k accuracy: the k reported, and which of them mean something for a number of classes."""

import numpy as np

TOP_K = (1, 5)


def top_k_accuracies(ranks: np.ndarray, num_classes: int) -> dict:
    """{"top1": …, "top5": …} in percent from each image's true-class rank; None for a k of the classes or more
    (every image would count as a hit: the number would mislead), top-1 of a single class excepted."""
    return {
        f"top{k}": None if k > num_classes or (k > 1 and k == num_classes) else float(100.0 * np.mean(ranks <= k))
        for k in TOP_K
    }
