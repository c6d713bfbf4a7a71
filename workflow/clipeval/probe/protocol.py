"""The linear-probe protocol: which training images each fit sees, and how its regularisation is chosen.

For each number of shots and each seed:

- k shots: k images of each class drawn from the train split without
  replacement, and up to k more of each class, drawn from the rest, to
  choose the regularisation on; the classifier is then fitted on the k
  alone, so every fit has seen exactly k labelled images a class.
- all: a `validation` fraction of the train split, drawn at random, to
  choose the regularisation on; the classifier is then refitted on the whole
  split (CLIP_benchmark's protocol: a sweep on a validation part, then a
  refit on all of train).

The regularisation is the value of the grid whose fit scores the highest
top-1 on the validation images; on a tie the larger value (the simpler
model). With one value in the grid there is nothing to choose and no
validation images are held out. Each (shots, seed) draws from its own
generator, seeded by both, so adding a shot count or a seed leaves the
others' draws as they were.
"""

from dataclasses import dataclass

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.probe.logistic import fit_logistic

ALL = "all"


@dataclass(frozen=True)
class ProbeSettings:
    shots: tuple  # numbers of images per class, and/or ALL
    seeds: int
    validation: float  # the share of the train split held out to choose the regularisation under ALL
    regularization: tuple  # the L2 penalties swept
    max_iterations: int = 1000


@dataclass(frozen=True)
class Fit:
    seed: int
    l2: float
    validation_top1: float | None  # None where the grid had one value
    predictions: np.ndarray  # a class per test image
    fitted_on: np.ndarray  # the train split's rows the classifier was fitted on
    validated_on: np.ndarray  # the rows the regularisation was chosen on


def shots_label(shots) -> str:
    return ALL if shots == ALL else str(int(shots))


def _generator(shots, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, 0 if shots == ALL else int(shots)])


def few_shot_split(labels: np.ndarray, num_classes: int, shots: int, validating: bool, rng, classnames, where):
    """(train indices, validation indices): `shots` images a class, and up to `shots` more to validate on."""
    train, validation = [], []
    needed = shots + (1 if validating else 0)
    for label in range(num_classes):
        members = np.flatnonzero(labels == label)
        if len(members) < needed:
            reason = f" ({shots} to fit on and at least one to choose the regularisation)" if validating else ""
            raise ClipevalError(
                f"{where}: class {classnames[label]!r} has {len(members)} images, fewer than the {needed} that"
                f" {shots}-shot probing needs{reason}"
            )
        drawn = rng.permutation(members)
        train.append(drawn[:shots])
        if validating:
            validation.append(drawn[shots : 2 * shots])
    validation = np.sort(np.concatenate(validation)) if validating else np.array([], dtype=np.int64)
    return np.sort(np.concatenate(train)), validation


def validation_split(count: int, share: float, rng, where) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, validation indices): a random `share` of the images, at least one, held out, and at
    least one left to fit on."""
    if count < 2:
        raise ClipevalError(
            f"{where}: the train split has {count} image{'s' if count != 1 else ''}, fewer than the 2 that probing"
            " on all of it needs (1 to fit on and at least one to choose the regularisation)"
        )
    held = min(count - 1, max(1, round(share * count)))
    drawn = rng.permutation(count)
    return np.sort(drawn[held:]), np.sort(drawn[:held])


def _top1(predicted: np.ndarray, labels: np.ndarray) -> float:
    return float(100.0 * np.mean(predicted == labels))


def choose_l2(train_x, train_y, validation_x, validation_y, num_classes, settings) -> tuple[float, float | None]:
    """(the grid's value with the best validation top-1, the larger on a tie; that top-1)."""
    grid = sorted(settings.regularization, reverse=True)
    if len(grid) == 1:
        return grid[0], None
    best, best_top1 = None, -1.0
    for l2 in grid:
        fitted = fit_logistic(train_x, train_y, num_classes, l2, settings.max_iterations)
        top1 = _top1(fitted.predict(validation_x), validation_y)
        if top1 > best_top1:
            best, best_top1 = l2, top1
    return best, best_top1


def _unchanged(fit: Fit):
    return fit.l2, fit.validation_top1, fit.predictions, fit.fitted_on, fit.validated_on


def probe_fits(train_x, train_y, test_x, num_classes: int, settings: ProbeSettings, classnames, where) -> dict:
    """{shots label: [Fit per seed]}: the protocol above, for each number of shots and seed."""
    validating = len(settings.regularization) > 1
    fits = {}
    for shots in settings.shots:
        fits[shots_label(shots)] = []
        for seed in range(settings.seeds):
            if shots == ALL and not validating and seed > 0:  # nothing is drawn: every seed fits the same
                fits[ALL].append(Fit(seed, *_unchanged(fits[ALL][0])))
                continue
            rng = _generator(shots, seed)
            if shots == ALL:
                if validating:
                    fit_part, held = validation_split(len(train_y), settings.validation, rng, where)
                else:
                    fit_part, held = np.arange(len(train_y)), np.array([], dtype=np.int64)
                final = np.arange(len(train_y))
            else:
                fit_part, held = few_shot_split(train_y, num_classes, int(shots), validating, rng, classnames, where)
                final = fit_part
            l2, validation_top1 = choose_l2(
                train_x[fit_part], train_y[fit_part], train_x[held], train_y[held], num_classes, settings
            )
            classifier = fit_logistic(train_x[final], train_y[final], num_classes, l2, settings.max_iterations)
            fits[shots_label(shots)].append(Fit(seed, l2, validation_top1, classifier.predict(test_x), final, held))
    return fits
