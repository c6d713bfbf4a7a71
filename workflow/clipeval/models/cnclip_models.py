"""Chinese-CLIP's own models (the `cn_clip` package) from a local checkpoint, as open_clip models: its
architectures by the names it gives them (ViT-B-16, ViT-L-14, ViT-L-14-336, ViT-H-14, RN50), its eval
preprocessing (a bicubic resize to the square, no crop) and its BERT tokenizer with the context length of 52
that its evaluation uses.

cn_clip pins lmdb 1.3.0, older than clipeval requires (1.4), so it is installed without its dependencies
(`pip install --no-deps cn_clip six`): its model code needs only torch, torchvision, timm and six.
"""

from pathlib import Path

from clipeval.errors import ClipevalError, first_line
from clipeval.models.pretrained import ModelName

CONTEXT_LENGTH = 52
INSTALL = "pip install --no-deps cn_clip==1.6.0 six"


def model_info() -> dict:
    """cn_clip's {name: {"struct": VISION@TEXT, "input_resolution": N}}, or one line saying how to install it."""
    try:
        from cn_clip.clip.utils import _MODEL_INFO
    except ImportError as error:
        raise ClipevalError(f"Chinese-CLIP models need the cn_clip package ({INSTALL}): {first_line(error)}") from None
    return _MODEL_INFO


def check_model_name(name: str) -> None:
    known = model_info()
    if name not in known:
        raise ClipevalError(f"unknown Chinese-CLIP model {name!r} (known: {', '.join(known)})")


def check_checkpoint(name: str, checkpoint: str | None) -> None:
    if not checkpoint:
        raise ClipevalError(f"a Chinese-CLIP model needs its checkpoint file (pretrained: clip_cn_{name.lower()}.pt)")
    if not Path(checkpoint).is_file():
        raise ClipevalError(f"{checkpoint}: checkpoint file not found (Chinese-CLIP model {name})")


class ChineseTokenizer:
    """cn_clip's tokenize at CONTEXT_LENGTH."""

    context_length = CONTEXT_LENGTH

    def __call__(self, texts):
        from cn_clip.clip.utils import tokenize

        return tokenize(list(texts), context_length=CONTEXT_LENGTH)

    def fits(self, texts):
        """Its BERT word pieces between [CLS] and [SEP], and those that are [UNK]."""
        from cn_clip.clip import _tokenizer

        from clipeval.features.tokenization import CaptionFit

        pieces = [_tokenizer.tokenize(text) for text in texts]
        return [CaptionFit(len(p) + 2, p.count("[UNK]")) for p in pieces]


def _checkpoint(checkpoint: str) -> dict:
    """A Chinese-CLIP checkpoint's contents (plain tensors only), or one line saying why it is none."""
    import torch

    try:
        saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as error:  # torch.load raises many types for a file that is not a checkpoint
        raise ClipevalError(f"{checkpoint}: not a loadable checkpoint ({type(error).__name__})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("state_dict"), dict):
        raise ClipevalError(f"{checkpoint}: no state_dict (a Chinese-CLIP checkpoint holds one)")
    return saved


def build_cnclip_model(name: str, checkpoint: str, device: str = "cpu"):
    """(model in eval mode and float32, eval preprocess, tokenizer) of a Chinese-CLIP checkpoint, as its
    evaluation loads it (cn_clip's create_model, then float on the CPU)."""
    import contextlib
    import io

    check_model_name(name)  # first: without cn_clip it says how to install it, in one line
    check_checkpoint(name, checkpoint)
    from cn_clip.clip.utils import create_model, image_transform

    info = model_info()[name]
    saved = _checkpoint(checkpoint)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # create_model prints the configs it reads
            model = create_model(info["struct"], saved)
    except (RuntimeError, KeyError, ValueError) as error:
        detail = first_line(error)
        raise ClipevalError(f"{checkpoint}: weights do not fit Chinese-CLIP model {name!r}: {detail}") from None
    model = model.float().to(device).eval()
    return model, image_transform(info["input_resolution"]), ChineseTokenizer()


# The backend contract (models/build.py): a `cn-clip:NAME` model, its checkpoint the `pretrained` file.


def check_name(name: ModelName) -> None:
    check_model_name(name.identifier)


def check_weights(name: ModelName, pretrained: str | None) -> None:
    check_checkpoint(name.identifier, pretrained)


def checkpoint_misfit(name: ModelName, checkpoint: str) -> str | None:
    """A checkpoint that is not loadable, or holds no state_dict, is one error; its tensors' fit is checked as
    cn_clip loads them."""
    _checkpoint(checkpoint)
    return None


def load(name: ModelName, pretrained: str | None, device: str, precision: str, preprocess: dict):
    if preprocess:
        raise ClipevalError(f"{name.arch}: a Chinese-CLIP model's preprocessing is cn_clip's own; no preprocess")
    return build_cnclip_model(name.identifier, pretrained, device)
