"""The offline "shapes" benchmark: rendered coloured shapes with varied captions.

Deterministic from a seed. Each image has one shape of a given colour, size
and position on a plain background; its five captions describe it in
different wordings, some leaving attributes out, as real captions do.
"""

import io
import math
import re
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from clipeval.data.captions import Captions
from clipeval.data.sources import CAPTIONS, CLASSES, FIRST_IMAGE_ID, PreparedSource, Setting, SourceFormat

IMAGE_SIZE = 64
_SUPERSAMPLE = 4
CAPTIONS_PER_IMAGE = 5

SHAPES = ("circle", "square", "triangle", "star", "cross", "diamond")
SHAPE_SYNONYMS = {
    "circle": ("circle", "disc", "round shape"),
    "square": ("square", "box", "square block"),
    "triangle": ("triangle", "triangle", "three-sided shape"),
    "star": ("star", "five-pointed star", "star shape"),
    "cross": ("cross", "plus sign", "cross shape"),
    "diamond": ("diamond", "rhombus", "diamond shape"),
}
COLOURS = {
    "red": (214, 40, 40),
    "green": (46, 160, 67),
    "blue": (38, 84, 214),
    "yellow": (240, 200, 30),
    "purple": (130, 60, 180),
    "orange": (245, 130, 32),
    "pink": (240, 110, 180),
    "cyan": (30, 200, 210),
}
BACKGROUNDS = {
    "white": (245, 245, 245),
    "black": (20, 20, 20),
    "grey": (128, 128, 128),
    "beige": (225, 210, 180),
}
SIZES = {"small": 0.16, "medium": 0.26, "large": 0.36}
POSITIONS = {
    "top left": (0.25, 0.25),
    "top": (0.5, 0.25),
    "top right": (0.75, 0.25),
    "left": (0.25, 0.5),
    "centre": (0.5, 0.5),
    "right": (0.75, 0.5),
    "bottom left": (0.25, 0.75),
    "bottom": (0.5, 0.75),
    "bottom right": (0.75, 0.75),
}
CLASSNAMES = SHAPES
CLASS_TEMPLATES = ("a {}", "a picture of a {}", "a {} shape", "a coloured {}", "there is a {} in the picture")

_TEMPLATES = (
    "a {size} {colour} {shape} in the {position}",
    "a {colour} {shape} on a {background} background",
    "{size} {colour} {shape}",
    "there is a {colour} {shape} at the {position} of the picture",
    "a picture of a {shape} coloured {colour}",
    "a {size} {shape} that is {colour}, {position}",
    "{colour} {shape} against {background}",
    "an image with a {size} {colour} {shape} near the {position}",
    "a {shape} painted {colour} on {background}",
    "the {position} holds a {colour} {shape}",
)


@dataclass(frozen=True)
class ShapeScene:
    shape: str
    colour: str
    background: str
    size: str
    position: str
    jitter: tuple[float, float]
    rotation: float


def sample_scene(rng: np.random.Generator) -> ShapeScene:
    return ShapeScene(
        shape=SHAPES[rng.integers(len(SHAPES))],
        colour=list(COLOURS)[rng.integers(len(COLOURS))],
        background=list(BACKGROUNDS)[rng.integers(len(BACKGROUNDS))],
        size=list(SIZES)[rng.integers(len(SIZES))],
        position=list(POSITIONS)[rng.integers(len(POSITIONS))],
        jitter=(float(rng.uniform(-0.05, 0.05)), float(rng.uniform(-0.05, 0.05))),
        rotation=float(rng.uniform(-0.3, 0.3)),
    )


def _polygon(shape: str, cx: float, cy: float, r: float, rotation: float) -> list[tuple[float, float]]:
    def ring(radii, count, offset):
        return [
            (
                cx + radii[i % len(radii)] * math.cos(offset + rotation + 2 * math.pi * i / count),
                cy + radii[i % len(radii)] * math.sin(offset + rotation + 2 * math.pi * i / count),
            )
            for i in range(count)
        ]

    if shape == "square":
        return ring([r * 1.15], 4, math.pi / 4)
    if shape == "triangle":
        return ring([r * 1.2], 3, -math.pi / 2)
    if shape == "star":
        return ring([r * 1.2, r * 0.5], 10, -math.pi / 2)
    if shape == "diamond":
        return [(cx, cy - r * 1.2), (cx + r * 0.75, cy), (cx, cy + r * 1.2), (cx - r * 0.75, cy)]
    if shape == "cross":
        w = r * 0.38
        return [
            (cx - w, cy - r),
            (cx + w, cy - r),
            (cx + w, cy - w),
            (cx + r, cy - w),
            (cx + r, cy + w),
            (cx + w, cy + w),
            (cx + w, cy + r),
            (cx - w, cy + r),
            (cx - w, cy + w),
            (cx - r, cy + w),
            (cx - r, cy - w),
            (cx - w, cy - w),
        ]
    raise ValueError(f"unknown shape {shape!r}")


def render_scene(scene: ShapeScene) -> bytes:
    """PNG bytes of the scene, drawn large and downsampled for smooth edges."""
    canvas = IMAGE_SIZE * _SUPERSAMPLE
    image = Image.new("RGB", (canvas, canvas), BACKGROUNDS[scene.background])
    draw = ImageDraw.Draw(image)
    fx, fy = POSITIONS[scene.position]
    cx = (fx + scene.jitter[0]) * canvas
    cy = (fy + scene.jitter[1]) * canvas
    r = SIZES[scene.size] * canvas / 2
    fill = COLOURS[scene.colour]
    if scene.shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
    else:
        draw.polygon(_polygon(scene.shape, cx, cy, r, scene.rotation), fill=fill)
    image = image.resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def describe(scene: ShapeScene, rng: np.random.Generator) -> list[str]:
    """Five captions in different wordings."""
    chosen = rng.choice(len(_TEMPLATES), size=CAPTIONS_PER_IMAGE, replace=False)
    captions = []
    for template_index in chosen:
        synonyms = SHAPE_SYNONYMS[scene.shape]
        captions.append(
            _TEMPLATES[template_index].format(
                size=scene.size,
                colour=scene.colour,
                shape=synonyms[rng.integers(len(synonyms))],
                position=scene.position,
                background=scene.background,
            )
        )
    return [_fix_articles(caption) for caption in captions]


def _fix_articles(text: str) -> str:
    return re.sub(r"\ba (?=[aeiou])", "an ", text)


def generate_shapes(num_images: int, seed: int, first_image_id: int = 0):
    """Return (images as (id, png bytes) list, Captions, classification labels)."""
    rng = np.random.default_rng(seed)
    images, text_ids, texts, positives, labels = [], [], [], [], []
    for offset in range(num_images):
        image_id = first_image_id + offset
        scene = sample_scene(rng)
        images.append((image_id, render_scene(scene)))
        labels.append((image_id, SHAPES.index(scene.shape)))
        for caption in describe(scene, rng):
            text_ids.append(len(text_ids))
            texts.append(caption)
            positives.append(np.array([image_id], dtype=np.int64))
    captions = Captions(np.array(text_ids, dtype=np.int64), texts, positives)
    return images, captions, labels


def read(settings) -> PreparedSource:
    images, captions, labels = generate_shapes(settings["num_images"], settings["seed"], settings["first_image_id"])
    source = {"format": "shapes", "num_images": settings["num_images"], "seed": settings["seed"]}
    return PreparedSource(images, captions, source, (labels, list(CLASSNAMES), list(CLASS_TEMPLATES)))


FORMAT = SourceFormat(
    name="shapes",
    help="generate the synthetic shapes benchmark",
    writes=CAPTIONS + CLASSES,
    settings=(
        Setting("num_images", "how many images to draw", type=int, required=True),
        Setting("seed", "the seed every image and caption follows from", type=int, required=True),
        FIRST_IMAGE_ID,
    ),
    read=read,
)
