"""Multinomial logistic regression with an L2 penalty, fitted by L-BFGS in float64.

The objective is the mean cross-entropy over the training images plus
`l2 / 2 · ‖W‖²` (the bias is not penalised): scikit-learn's
LogisticRegression(C) minimises the same function with l2 = 1 / (C · n).
Every step is a fixed sequence of float64 numpy operations with no random
choice, so the same features, labels and settings give the same bits, with
any number of BLAS threads (tests/test_probe.py runs one and two): OpenBLAS
splits a product's sum over the images between its threads, so the
gradient's sum over the images is taken block by block, each block's product
small, the blocks added in order.
"""

from dataclasses import dataclass

import numpy as np

HISTORY = 10  # L-BFGS's stored curvature pairs
ARMIJO = 1e-4  # the sufficient-decrease constant of the backtracking line search
MAX_HALVINGS = 60
BLOCK = 128  # images per block of the gradient's sum over images


@dataclass(frozen=True)
class LinearClassifier:
    weights: np.ndarray  # features × classes
    bias: np.ndarray  # classes

    def logits(self, features: np.ndarray) -> np.ndarray:
        return np.asarray(features, dtype=np.float64) @ self.weights + self.bias

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Each row's class: the largest logit, the lower class index on a tie (np.argmax's first)."""
        return np.argmax(self.logits(features), axis=1)


class _Images:
    """The training features, and their blocks of BLOCK images transposed (zero rows pad the last), for
    features.T @ rows summed block by block."""

    def __init__(self, features: np.ndarray):
        self.features = features
        padded = -(-len(features) // BLOCK) * BLOCK
        blocks = np.zeros((padded, features.shape[1]))
        blocks[: len(features)] = features
        self.blocks = np.ascontiguousarray(blocks.reshape(-1, BLOCK, features.shape[1]).transpose(0, 2, 1))

    def transposed_product(self, rows: np.ndarray) -> np.ndarray:
        padded = np.zeros((self.blocks.shape[0] * BLOCK, rows.shape[1]))
        padded[: len(rows)] = rows
        return np.matmul(self.blocks, padded.reshape(self.blocks.shape[0], BLOCK, -1)).sum(axis=0)


def _loss_and_gradient(theta, images: _Images, one_hot, l2):
    dimension, classes = images.features.shape[1], one_hot.shape[1]
    weights = theta[: dimension * classes].reshape(dimension, classes)
    bias = theta[dimension * classes :]
    logits = images.features @ weights + bias
    logits -= logits.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(logits).sum(axis=1, keepdims=True))
    log_probabilities = logits - log_norm
    count = len(one_hot)
    loss = -(one_hot * log_probabilities).sum() / count + 0.5 * l2 * (weights * weights).sum()
    residual = (np.exp(log_probabilities) - one_hot) / count
    gradient_weights = images.transposed_product(residual) + l2 * weights
    return loss, np.concatenate([gradient_weights.ravel(), residual.sum(axis=0)])


def _direction(gradient, steps, changes):
    """L-BFGS's two-loop recursion: an approximation of −H⁻¹·gradient from the stored pairs."""
    q = -gradient
    alphas = []
    for s, y in zip(reversed(steps), reversed(changes)):
        alpha = (s @ q) / (y @ s)
        q = q - alpha * y
        alphas.append(alpha)
    if steps:
        q = q * ((steps[-1] @ changes[-1]) / (changes[-1] @ changes[-1]))
    for (s, y), alpha in zip(zip(steps, changes), reversed(alphas)):
        beta = (y @ q) / (y @ s)
        q = q + (alpha - beta) * s
    return q


def fit_logistic(
    features: np.ndarray, labels: np.ndarray, num_classes: int, l2: float, max_iterations: int = 1000, tolerance=1e-9
) -> LinearClassifier:
    """The minimiser of the penalised mean cross-entropy, to a largest gradient entry of `tolerance` or after
    `max_iterations` L-BFGS steps (weakly penalised, separable data has no finite minimiser to reach)."""
    features = np.ascontiguousarray(features, dtype=np.float64)
    images = _Images(features)
    one_hot = np.zeros((len(labels), num_classes))
    one_hot[np.arange(len(labels)), labels] = 1.0
    theta = np.zeros(features.shape[1] * num_classes + num_classes)
    loss, gradient = _loss_and_gradient(theta, images, one_hot, l2)
    steps, changes = [], []
    for _ in range(max_iterations):
        if np.abs(gradient).max() <= tolerance:
            break
        direction = _direction(gradient, steps, changes)
        slope = gradient @ direction
        if slope >= 0:  # not a descent direction: forget the curvature pairs, go down the gradient
            steps, changes = [], []
            direction, slope = -gradient, -(gradient @ gradient)
        step = 1.0 if steps else min(1.0, 1.0 / np.abs(gradient).sum())
        for _ in range(MAX_HALVINGS):
            candidate = theta + step * direction
            new_loss, new_gradient = _loss_and_gradient(candidate, images, one_hot, l2)
            if new_loss <= loss + ARMIJO * step * slope:
                break
            step /= 2
        else:
            break  # no decrease left at float64's resolution
        change = new_gradient - gradient
        moved = candidate - theta
        if change @ moved > 1e-12 * (moved @ moved):
            steps.append(moved)
            changes.append(change)
            if len(steps) > HISTORY:
                steps.pop(0)
                changes.pop(0)
        theta, loss, gradient = candidate, new_loss, new_gradient
    dimension = features.shape[1]
    return LinearClassifier(
        theta[: dimension * num_classes].reshape(dimension, num_classes).copy(), theta[dimension * num_classes :].copy()
    )
