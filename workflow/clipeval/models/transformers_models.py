"""Hugging Face transformers CLIP and SigLIP models from a local folder (`save_pretrained`'s output), as open_clip
models: encode_image, encode_text, the eval preprocess and a tokenizer, each the folder's own.

The folder names its architecture in config.json (`model_type`), its image
processor in preprocessor_config.json and its tokenizer in the tokenizer's
files; nothing is downloaded (local_files_only), and none of the folder's own
code runs (trust_remote_code=False). Captions are padded to the
text tower's length, as both were trained: CLIP's causal attention leaves the
end-of-text token's output untouched by the padding after it, and SigLIP
reads the last position of a caption padded to its length.
"""

import pickle
from pathlib import Path

import torch

from clipeval.errors import ClipevalError, first_line
from clipeval.models.pretrained import ModelName

MODEL_TYPES = ("clip", "siglip", "siglip2")
FOLDER_FILES = ("config.json", "preprocessor_config.json")


def _features(output) -> torch.Tensor:
    """get_*_features' projected features: a tensor (transformers 4) or the output's pooler_output (5)."""
    return output if torch.is_tensor(output) else output.pooler_output


class TransformersClip(torch.nn.Module):
    """A transformers CLIP or SigLIP model with open_clip's encode_image and encode_text."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        return _features(self.model.get_image_features(pixel_values=pixels))

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        return _features(self.model.get_text_features(input_ids=tokens))


class ImageProcessorTransform:
    """The folder's image processor, one PIL image to a channels-first float32 tensor (picklable for loader
    workers)."""

    def __init__(self, processor):
        self.processor = processor

    def __call__(self, image) -> torch.Tensor:
        return self.processor(images=image.convert("RGB"), return_tensors="pt")["pixel_values"][0].float()


class PaddedTokenizer:
    """The folder's tokenizer, captions padded (and cut) to the text tower's length."""

    def __init__(self, tokenizer, length: int):
        self.tokenizer, self.context_length = tokenizer, length

    def __call__(self, texts: list[str]) -> torch.Tensor:
        encoded = self.tokenizer(
            list(texts), padding="max_length", max_length=self.context_length, truncation=True, return_tensors="pt"
        )
        return encoded["input_ids"]

    def fits(self, texts: list[str]):
        from clipeval.features.tokenization import transformers_fits

        return transformers_fits(self.tokenizer, texts)


def check_folder(folder: Path) -> None:
    """The files a transformers model folder needs, and a model type clipeval reads, or one line saying which."""
    if not folder.is_dir():
        raise ClipevalError(f"{folder}: model folder not found")
    for name in FOLDER_FILES:
        if not (folder / name).is_file():
            raise ClipevalError(f"{folder}: no {name} (a transformers model folder, as save_pretrained writes it)")
    import json

    try:
        model_type = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError) as error:
        raise ClipevalError(f"{folder / 'config.json'}: not a model config ({type(error).__name__})") from None
    if model_type not in MODEL_TYPES:
        raise ClipevalError(
            f"{folder / 'config.json'}: model_type {model_type!r} is not one clipeval reads ({', '.join(MODEL_TYPES)})"
        )
    check_weights_file(folder)


# The weights save_pretrained writes: safetensors (a file, or shards and their index), else torch's pickle.
SAFETENSORS_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
TORCH_WEIGHTS = "pytorch_model.bin"


def check_weights_file(folder: Path) -> None:
    """A weights file transformers will read: safetensors, or a pytorch_model.bin that torch loads as plain
    tensors (a pickle of anything else, which transformers refuses only once a job loads it)."""
    if any((folder / name).is_file() for name in SAFETENSORS_WEIGHTS):
        return
    if not (folder / TORCH_WEIGHTS).is_file():
        raise ClipevalError(f"{folder}: no weights ({', '.join(SAFETENSORS_WEIGHTS)} or {TORCH_WEIGHTS})")
    try:
        torch.load(folder / TORCH_WEIGHTS, map_location="meta", weights_only=True)
    except Exception as error:  # torch.load raises many types for a file that is not plain tensors
        raise ClipevalError(
            f"{folder / TORCH_WEIGHTS}: not plain tensors, which is all clipeval loads ({type(error).__name__})"
        ) from None


def build_transformers_model(folder: Path, device: str = "cpu"):
    """(model in eval mode, eval preprocess, tokenizer) of a local transformers CLIP or SigLIP folder."""
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    check_folder(folder)
    # Never the folder's own Python (auto_map): without trust_remote_code=False, transformers asks on standard
    # input whether to run it wherever the library lacks the class a config names, and a `y` there runs it.
    local = {"local_files_only": True, "trust_remote_code": False}
    try:
        model, loading = AutoModel.from_pretrained(folder, dtype=torch.float32, output_loading_info=True, **local)
        processor = AutoImageProcessor.from_pretrained(folder, **local)
        tokenizer = AutoTokenizer.from_pretrained(folder, **local)
    except (OSError, ValueError, KeyError, RuntimeError, pickle.UnpicklingError) as error:  # RuntimeError: shapes
        raise ClipevalError(f"{folder}: cannot load the transformers model: {first_line(error)}") from None
    # transformers starts a weight the folder lacks at random, and says so only in a log: other numbers each run.
    missing = sorted(loading["missing_keys"])
    if missing:
        raise ClipevalError(
            f"{folder}: its weights lack {len(missing)} of the model's tensors ({', '.join(missing[:3])}"
            f"{', …' if len(missing) > 3 else ''}), which transformers would start at random"
        )
    tokens = PaddedTokenizer(tokenizer, model.config.text_config.max_position_embeddings)
    return TransformersClip(model).to(device).eval(), ImageProcessorTransform(processor), tokens


# The backend contract (models/build.py): a transformers folder's model is its arch; the folder holds its weights.


def check_name(name: ModelName) -> None:
    check_folder(name.folder)


def check_weights(name: ModelName, pretrained: str | None) -> None:
    if pretrained:
        raise ClipevalError(f"a transformers folder holds its own weights: give pretrained: '' (not {pretrained!r})")


def checkpoint_misfit(name: ModelName, checkpoint: str) -> str | None:
    """Never asked: check_weights refuses any checkpoint."""
    return None


def load(name: ModelName, pretrained: str | None, device: str, precision: str, preprocess: dict):
    check_weights(name, pretrained)
    if preprocess:
        raise ClipevalError(
            f"{name.arch}: a transformers folder's preprocessing is its image processor's; no preprocess"
        )
    return build_transformers_model(name.folder, device)
