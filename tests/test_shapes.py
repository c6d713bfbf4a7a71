import io

import numpy as np
from PIL import Image

from clipeval.data.sources.shapes import COLOURS, SHAPE_SYNONYMS, generate_shapes


def test_deterministic_from_seed():
    first = generate_shapes(20, seed=3)
    again = generate_shapes(20, seed=3)
    other = generate_shapes(20, seed=4)
    assert first[0] == again[0] and first[1].texts == again[1].texts
    assert first[0] != other[0]


def test_five_varied_captions_per_image_that_describe_it():
    images, captions, labels = generate_shapes(50, seed=0, first_image_id=1000)
    assert [image_id for image_id, _ in images] == list(range(1000, 1050))
    assert len(captions) == 250
    assert [ids.tolist() for ids in captions.image_ids[:5]] == [[1000]] * 5
    shape_of = {image_id: label for image_id, label in labels}
    from clipeval.data.sources.shapes import SHAPES

    for text, positives in zip(captions.texts, captions.image_ids):
        shape = SHAPES[shape_of[int(positives[0])]]
        assert any(word in text for word in SHAPE_SYNONYMS[shape]), text
        assert set(text.replace(",", " ").split()) & set(COLOURS), text
    per_image = [captions.texts[i : i + 5] for i in range(0, 250, 5)]
    assert all(len(set(group)) >= 4 for group in per_image)
    assert " a orange" not in " ".join(captions.texts)


def test_images_are_64px_rgb_pngs_showing_their_colour():
    images, captions, _ = generate_shapes(10, seed=1)
    for (image_id, raw), text in zip(images, captions.texts[::5]):
        image = Image.open(io.BytesIO(raw))
        assert image.format == "PNG" and image.size == (64, 64) and image.mode == "RGB"
        colour = next(word for word in text.replace(",", " ").split() if word in COLOURS)
        pixels = np.asarray(image, dtype=np.int64).reshape(-1, 3)
        closest = ((pixels - np.array(COLOURS[colour])) ** 2).sum(axis=1).min()
        assert closest < 300, (image_id, colour)
