"""Can a model be built as its config entry says? The arch, the pretrained tag or the checkpoint's fit, and the
precision on the device, checked without loading any weight, each answered with the one line that names the
config key."""

from clipeval.errors import ClipevalError, first_line
from clipeval.models.build import BIG_VISION_SUFFIX, check_arch, check_loadable, check_pretrained, resolve_device
from clipeval.models.pretrained import HF_HUB_PREFIX, LOCAL_DIR_PREFIX, is_checkpoint_path, is_open_clip
from clipeval.models.weights_fit import weights_misfit


def model_problem(name, arch, pretrained, precision, precision_key, device, weights_key=None) -> str | None:
    """'models.NAME.KEY: what is wrong', or None. `device` None leaves the precision unchecked; `weights_key` is
    the key `pretrained` comes from (default models.NAME.pretrained)."""
    key = f"models.{name}"
    weights_key = weights_key or f"{key}.pretrained"
    try:
        check_arch(arch)
    except ClipevalError as error:
        return f"{key}.arch: {error}"
    try:
        check_pretrained(arch, pretrained)
        if pretrained and is_checkpoint_path(pretrained):
            misfit = _checkpoint_misfit(arch, pretrained)
            if misfit:
                return f"{weights_key}: {pretrained}: weights do not fit arch {arch!r}: {misfit}"
    except ClipevalError as error:
        return f"{weights_key}: {error}"
    if device is not None:
        return _precision_problem(precision, precision_key, device)
    return None


def _checkpoint_misfit(arch: str, checkpoint: str) -> str | None:
    check_loadable(checkpoint)
    # A folder arch loads its own weights; big_vision arrays are copied in by name, not by a strict load; cn_clip
    # checks its own checkpoints' fit as it loads them.
    if arch.startswith((HF_HUB_PREFIX, LOCAL_DIR_PREFIX)) or checkpoint.endswith(BIG_VISION_SUFFIX):
        return None
    if not is_open_clip(arch):
        return None
    try:
        return weights_misfit(arch, checkpoint)
    except OSError as error:  # a text tower's config (transformers) neither cached nor downloadable
        detail = first_line(error)
        raise ClipevalError(f"cannot build arch {arch!r} to check {checkpoint} against it: {detail}") from None


def _precision_problem(precision: str, precision_key: str, device: str) -> str | None:
    from clipeval.features.encode import check_precision

    try:
        resolved = resolve_device(device)
    except ClipevalError as error:
        return f"extract.device: {error}"
    try:
        check_precision(precision, resolved)
    except ClipevalError as error:
        return f"{precision_key}: {error}"
    return None
