"""A model's eval preprocessing, read without building it for real: open_clip's config and the pixel recipe."""

import sys

import open_clip
from open_clip.transform import PreprocessCfg, image_transform_v2

from clipeval.errors import first_line
from clipeval.features.pixels import model_recipe
from clipeval.models.open_clip_models import PREPROCESS_ARGUMENTS, carried_settings, with_carried_preprocessing
from clipeval.models.pretrained import parse_model_name
from clipeval.models.weights_fit import empty_model


def preprocess_config(arch: str, pretrained: str | None, preprocess=None) -> dict:
    """open_clip's final eval preprocess config of a model, read from the model built on the meta device
    without weights (nothing is computed, allocated or loaded; a pretrained tag's file is fetched, as open_clip
    fetches it to read its config)."""
    overrides = {PREPROCESS_ARGUMENTS[key].removeprefix("image_"): value for key, value in (preprocess or {}).items()}
    model = empty_model(arch, pretrained=pretrained or None, force_preprocess_cfg=overrides)
    return open_clip.get_model_preprocess_cfg(model)


def pixel_recipe(arch: str, pretrained: str | None, preprocess=None) -> str | None:
    """The pixel recipe of a model's eval preprocessing (features/pixels.py), None where it has none (a
    transformers folder's image processor and cn_clip's transform are not open_clip's steps)."""
    if not parse_model_name(arch).backend.open_clip_preprocessing:
        return None
    try:
        carried = carried_settings(arch, pretrained)
        config = preprocess_config(arch, pretrained, with_carried_preprocessing(carried, preprocess or {}))
    except Exception as error:  # a model that cannot be built so is extracted without the pixel stage
        detail = first_line(error)
        print(
            f"{arch}: preprocessing not read without weights ({detail}); extraction decodes its images", file=sys.stderr
        )
        return None
    return model_recipe(config, image_transform_v2(PreprocessCfg(**config), is_train=False))
