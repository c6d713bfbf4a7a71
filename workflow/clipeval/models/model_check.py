"""Can a model be built as its config entry says? The arch, the pretrained tag or the checkpoint's fit, and the
precision on the device, checked without loading any weight, each answered with the one line that names the
config key."""

from clipeval.errors import ClipevalError
from clipeval.models.build import backend_of, resolve_device
from clipeval.models.pretrained import is_checkpoint_path, parse_model_name


def model_problem(name, arch, pretrained, precision, precision_key, device, weights_key=None) -> str | None:
    """'models.NAME.KEY: what is wrong', or None. `device` None leaves the precision unchecked; `weights_key` is
    the key `pretrained` comes from (default models.NAME.pretrained)."""
    key = f"models.{name}"
    weights_key = weights_key or f"{key}.pretrained"
    model = parse_model_name(arch)
    backend = backend_of(model)
    try:
        backend.check_name(model)
    except ClipevalError as error:
        return f"{key}.arch: {error}"
    try:
        backend.check_weights(model, pretrained)
        if pretrained and is_checkpoint_path(pretrained):
            misfit = backend.checkpoint_misfit(model, pretrained)
            if misfit:
                return f"{weights_key}: {pretrained}: weights do not fit arch {arch!r}: {misfit}"
    except ClipevalError as error:
        return f"{weights_key}: {error}"
    if device is not None:
        return _precision_problem(precision, precision_key, device)
    return None


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
