"""What the JSON caption annotations of Karpathy and COCO have in common."""

import numpy as np

from clipeval.data.captions import Captions
from clipeval.errors import ClipevalError
from clipeval.storage.ids import require_id


def list_field(data, field, path) -> list:
    value = data.get(field)
    if not isinstance(value, list):
        raise ClipevalError(f"{path}: expected a list under {field!r}")
    return value


class CaptionCollector:
    """Captions with unique ids and non-empty text, each naming one image."""

    def __init__(self, path):
        self.path = path
        self.text_ids, self.texts, self.image_ids = [], [], []
        self._seen = set()

    def add(self, text_id, text, image_id, where):
        text_id = require_id(text_id, where, "caption id")
        if text_id in self._seen:
            raise ClipevalError(f"{where}: duplicate caption id {text_id}")
        self._seen.add(text_id)
        if not isinstance(text, str) or not text.strip():
            raise ClipevalError(f"{where}: caption id {text_id} has an empty caption")
        self.text_ids.append(text_id)
        self.texts.append(text.strip())
        self.image_ids.append(np.array([image_id], dtype=np.int64))

    def captions(self) -> Captions:
        if not self.text_ids:
            raise ClipevalError(f"{self.path}: no captions in the selection")
        return Captions(np.array(self.text_ids, dtype=np.int64), self.texts, self.image_ids)
