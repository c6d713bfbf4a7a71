"""A classification dataset's classes and labels with one model's image and class features, checked
against each other before anything is scored or drawn."""

from dataclasses import dataclass

import numpy as np

from clipeval.classification.metrics import ClassSpec, align_labels, load_classes, load_labels
from clipeval.classification.multilabel import is_multilabel, load_multilabels
from clipeval.errors import ClipevalError
from clipeval.features.feature_files import check_same_dimension, read_features


@dataclass(frozen=True)
class ClassificationInputs:
    spec: ClassSpec
    image_ids: np.ndarray
    images: np.ndarray  # image features, one row per image id
    classes: np.ndarray  # class embeddings, one row per class in index order
    labels: np.ndarray  # each image's class index (or, multi-label, a row of the classes it holds), in feature order


@dataclass(frozen=True)
class LabelledImages:
    spec: ClassSpec
    image_ids: np.ndarray
    images: np.ndarray  # image features, one row per image id
    labels: np.ndarray  # each image's class index, in image feature order


def load_labelled_images(classes_path, labels_path, image_feats, multilabel=False) -> LabelledImages:
    """A classification dataset's classes and labels with a model's image features, every image labelled; a
    multi-label set's (a row of booleans an image) where `multilabel`, refused otherwise."""
    spec = load_classes(classes_path)
    load = load_multilabels if multilabel and is_multilabel(labels_path) else load_labels
    label_ids, labels = load(labels_path, len(spec.classnames))
    image_ids, images = read_features(image_feats, "image_id")
    return LabelledImages(spec, image_ids, images, align_labels(image_ids, label_ids, labels, image_feats))


def load_classification_inputs(classes_path, labels_path, image_feats, class_feats) -> ClassificationInputs:
    """A classification dataset's classes and labels (single- or multi-label) with a model's image and class
    features, checked against each other (every problem names its file)."""
    labelled = load_labelled_images(classes_path, labels_path, image_feats, multilabel=True)
    class_ids, classes = read_features(class_feats, "class_id")
    if class_ids.tolist() != list(range(len(labelled.spec.classnames))):
        raise ClipevalError(f"{class_feats}: expected class_id 0 to {len(labelled.spec.classnames) - 1} in order")
    check_same_dimension(image_feats, labelled.images, class_feats, classes)
    return ClassificationInputs(labelled.spec, labelled.image_ids, labelled.images, classes, labelled.labels)
