"""The pixel stage: images decoded once per recipe give the features that decoding them in extraction gives."""

import io

import numpy as np
import pytest
from conftest import collected, extract_with_tiny
from PIL import Image

from clipeval.cli import main
from clipeval.data.image_lmdb import ImageStore, write_image_store
from clipeval.errors import ClipevalError
from clipeval.features.encode import iter_image_features
from clipeval.features.pixel_files import open_stored_pixels
from clipeval.features.pixels import recipe_key, recipe_of
from clipeval.features.sharding import pixel_shards_read
from clipeval.models.build import build_model
from clipeval.models.preprocessing import pixel_recipe

IMAGE_COUNT = 70  # more than one block of 64, so a shard of 50 reads its neighbour's pixels


def encoded(image: Image.Image, kind: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, kind)
    return buffer.getvalue()


def varied_images(count):
    """Photographs' variety: sizes wider and taller than square, smaller than the model's input, and the
    modes a dataset holds (RGB JPEG, greyscale, RGBA and palette PNG, CMYK JPEG)."""
    rng = np.random.default_rng(3)
    for index in range(count):
        height, width = (int(v) for v in rng.integers(9, 140, size=2))
        rgb = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
        kind = index % 5
        if kind == 0:
            yield index, encoded(rgb, "JPEG")
        elif kind == 1:
            yield index, encoded(rgb.convert("L"), "PNG")
        elif kind == 2:
            yield index, encoded(rgb.convert("RGBA"), "PNG")
        elif kind == 3:
            yield index, encoded(rgb.convert("P"), "PNG")
        else:
            yield index, encoded(rgb.convert("CMYK"), "JPEG")


@pytest.fixture(scope="module")
def varied_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("varied") / "images.lmdb"
    write_image_store(path, varied_images(IMAGE_COUNT))
    return ImageStore(path)


def decode_pixels(store, recipe, folder, shard_size=0, shards=1, store_pixels="yes"):
    """The decode-pixels command's shard folders, run in this process (it pins no numerics: only PIL computes)."""
    folders = [folder / str(index) for index in range(shards)]
    store.close()  # LMDB opens a store once per process; the command opens its own
    for index, out in enumerate(folders):
        arguments = ["--images", store.path, "--recipe", recipe, "--shard-size", shard_size, "--shard-index", index]
        arguments += ["--store", store_pixels, "--num-workers", 0, "--output", out]
        assert main(["decode-pixels", *map(str, arguments)]) == 0
    return folders


def features(model, store, **options):
    settings = {"batch_size": 16, "num_workers": 0, "device": "cpu", "precision": "fp32", **options}
    return collected(iter_image_features(model[0], model[1], store, store.image_ids(), **settings))


@pytest.mark.parametrize(
    "preprocess",
    [
        {},  # shortest side resized, centre crop
        {"resize_mode": "squash", "interpolation": "bilinear"},
        {"resize_mode": "longest"},  # letterbox: longest side resized, padded
    ],
)
@pytest.mark.slow
def test_features_from_stored_pixels_are_the_bits_of_decoding(tiny_checkpoint, varied_store, tmp_path, preprocess):
    model = build_model("clipeval-tiny", str(tiny_checkpoint), preprocess=preprocess)
    recipe = pixel_recipe("clipeval-tiny", str(tiny_checkpoint), preprocess)
    assert recipe == recipe_key({"size": 64, "resize_mode": "shortest", "interpolation": "bicubic", **preprocess})
    folders = decode_pixels(varied_store, recipe, tmp_path, shard_size=50, shards=2)
    image_ids = varied_store.image_ids()
    pixels = open_stored_pixels(folders, recipe, image_ids)
    assert pixels.rows(0, IMAGE_COUNT).shape == (IMAGE_COUNT, 64, 64, 3)
    whole_ids, whole = features(model, varied_store)
    for start, stop in ((0, 50), (50, 70)):  # the second shard's first block begins in the first shard
        ids, from_pixels = features(model, varied_store, pixels=pixels, start=start, stop=stop)
        assert np.array_equal(ids, whole_ids[start:stop])
        assert np.array_equal(from_pixels, whole[start:stop])


@pytest.mark.slow
def test_extract_features_reads_stored_pixels_and_decodes_where_none_are_stored(
    tiny_checkpoint, varied_store, tmp_path
):
    recipe = pixel_recipe("clipeval-tiny", str(tiny_checkpoint))
    stored = decode_pixels(varied_store, recipe, tmp_path / "stored")
    unstored = decode_pixels(varied_store, recipe, tmp_path / "unstored", store_pixels="no")
    assert sorted(p.name for p in stored[0].iterdir()) == ["manifest.json", "pixels.npy"]
    assert sorted(p.name for p in unstored[0].iterdir()) == ["manifest.json"]
    outputs = {}
    # Without pixels.npy the command decodes the images itself, as it does without --pixels.
    for name, folders in (("stored", stored), ("unstored", unstored)):
        arguments = ["--pixels", *folders]
        result = extract_with_tiny(
            tiny_checkpoint,
            *("--images", varied_store.path, "--image-output", tmp_path / f"{name}.jsonl"),
            *("--num-workers", 0, "--device", "cpu", *arguments),
        )
        assert result.returncode == 0, result.stderr
        outputs[name] = (tmp_path / f"{name}.jsonl").read_bytes()
        said = "pixels of 64x64-shortest-bicubic-fill0 read from" if name == "stored" else "decoded here"
        assert said in result.stdout
    assert outputs["stored"] == outputs["unstored"]


@pytest.mark.slow
def test_pixels_of_another_recipe_are_refused(tiny_checkpoint, varied_store, tmp_path):
    folders = decode_pixels(varied_store, "64x64-squash-bicubic-fill0", tmp_path)
    result = extract_with_tiny(
        tiny_checkpoint,
        *("--images", varied_store.path, "--image-output", tmp_path / "f.jsonl", "--device", "cpu"),
        *("--pixels", *folders),
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"clipeval: error: {folders[0]}: pixels of recipe '64x64-squash-bicubic-fill0' (format 2),"
        " not '64x64-shortest-bicubic-fill0'"
    )
    assert not (tmp_path / "f.jsonl").exists()


def test_pixels_of_other_images_are_refused(varied_store, tmp_path):
    recipe = "64x64-shortest-bicubic-fill0"
    folders = decode_pixels(varied_store, recipe, tmp_path)
    with pytest.raises(ClipevalError, match=r"its images are not positions \[0, 70\) of this dataset"):
        open_stored_pixels(folders, recipe, varied_store.image_ids() + 1)


def test_pixels_changed_on_disk_are_refused_until_they_are_the_ones_written(varied_store, tmp_path):
    """A pixels.npy edited after decode-pixels wrote it gave other numbers, unnoticed; its digest is checked."""
    recipe = "64x64-shortest-bicubic-fill0"
    (folder,) = decode_pixels(varied_store, recipe, tmp_path)
    written = (folder / "pixels.npy").read_bytes()
    changed = bytearray(written)
    changed[-1] ^= 1
    (folder / "pixels.npy").write_bytes(bytes(changed))
    with pytest.raises(ClipevalError) as error:
        open_stored_pixels([folder], recipe, varied_store.image_ids())
    assert str(error.value) == (
        f"{folder}/pixels.npy: not the pixels decode-pixels wrote (it changed since): delete {folder} and run"
        " again, to decode the images anew"
    )
    (folder / "pixels.npy").write_bytes(written)
    assert open_stored_pixels([folder], recipe, varied_store.image_ids()).rows(0, 2).shape == (2, 64, 64, 3)


def test_recipes_name_what_decides_the_pixels():
    config = {"size": (224, 256), "mode": "RGB", "interpolation": "bilinear", "resize_mode": "squash", "fill_color": 0}
    assert recipe_key(config) == "224x256-squash-bilinear-fill0"
    assert recipe_key({**config, "size": 224}) == "224x224-squash-bilinear-fill0"
    assert recipe_of("224x256-squash-bilinear-fill0") == {
        "image_size": (224, 256),
        "resize_mode": "squash",
        "interpolation": "bilinear",
        "fill_color": 0,
    }
    assert recipe_key({**config, "fill_color": (1, 2, 3)}) is None
    assert recipe_key({**config, "size": (3, 224, 224)}) is None
    assert recipe_key({**config, "resize_mode": "crop-to-fit"}) is None
    with pytest.raises(ClipevalError, match=r"^'224-squash' is not a pixel recipe"):
        recipe_of("224-squash")


def test_an_extraction_shard_reads_the_pixel_shards_its_blocks_reach():
    assert list(pixel_shards_read(0, 0, 1000)) == [0]
    assert list(pixel_shards_read(1, 128, 1000)) == [1]  # shards of whole blocks read only their own
    assert list(pixel_shards_read(1, 50, 1000)) == [0, 1, 2]  # positions [50, 100): blocks [0, 128)
    assert list(pixel_shards_read(2, 50, 1000)) == [1, 2, 3]  # [100, 150): blocks [64, 192)
    assert list(pixel_shards_read(19, 50, 1000)) == [17, 18, 19]  # [950, 1000): blocks [896, 1000)


@pytest.mark.parametrize("lag", [0, 1, 3, 10])
def test_lagged_hands_each_item_on_in_order_once_lag_more_are_made(lag):
    from clipeval.features.encode import _lagged

    made = []

    def items():
        for item in range(6):
            made.append(item)
            yield item

    handed_on = []
    for item in _lagged(items(), lag):
        assert made[-1] == min(item + lag, 5)
        handed_on.append(item)
    assert handed_on == made == list(range(6))
