"""A model's eval preprocessing, read without building it for real: open_clip's config and the pixel recipe."""

import logging
import sys

import open_clip
import torch
from open_clip.transform import PreprocessCfg, image_transform_v2

from clipeval.features.pixels import model_recipe
from clipeval.models.build import PREPROCESS_ARGUMENTS


def preprocess_config(arch: str, pretrained: str | None, preprocess=None) -> dict:
    """open_clip's final eval preprocess config of a model, read from the model built on the meta device
    without weights (nothing is computed, allocated or loaded; a pretrained tag's file is fetched, as open_clip
    fetches it to read its config)."""
    overrides = {PREPROCESS_ARGUMENTS[key].removeprefix("image_"): value for key, value in (preprocess or {}).items()}
    # open_clip warns that a model it loads no weights into is initialised randomly: true of this empty
    # shell, and not for the model this describes.
    logging.disable(logging.WARNING)
    try:
        with torch.device("meta"):
            model = open_clip.create_model(
                arch,
                pretrained=pretrained or None,
                load_weights=False,
                device="meta",
                pretrained_text=False,
                force_preprocess_cfg=overrides,
            )
    finally:
        logging.disable(logging.NOTSET)
    return open_clip.get_model_preprocess_cfg(model)


def pixel_recipe(arch: str, pretrained: str | None, preprocess=None) -> str | None:
    """The pixel recipe of a model's eval preprocessing (features/pixels.py), None where it has none."""
    try:
        config = preprocess_config(arch, pretrained, preprocess)
    except Exception as error:  # a model that cannot be built so is extracted without the pixel stage
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(
            f"{arch}: preprocessing not read without weights ({detail}); extraction decodes its images", file=sys.stderr
        )
        return None
    return model_recipe(config, image_transform_v2(PreprocessCfg(**config), is_train=False))
