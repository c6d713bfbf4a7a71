"""The two retrieval directions, and the keys their prediction files use."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Direction:
    name: str  # "t2i"
    query_side: str  # the features that query: "texts"
    gallery_side: str  # the features searched: "images"
    query_key: str  # a query's id key: "text_id"
    item_key: str  # a gallery item's id key: "image_id"

    @property
    def predicted_key(self) -> str:
        """The key of a prediction row's ranked ids, as in Chinese-CLIP's files: "image_ids"."""
        return f"{self.item_key}s"


TEXT_TO_IMAGE = Direction("t2i", "texts", "images", "text_id", "image_id")
IMAGE_TO_TEXT = Direction("i2t", "images", "texts", "image_id", "text_id")
DIRECTIONS = {direction.name: direction for direction in (TEXT_TO_IMAGE, IMAGE_TO_TEXT)}
