"""Device names, torch's in every stage: auto, cpu, cuda (GPU 0) and cuda:N."""

from clipeval.errors import ClipevalError


def gpu_number(device: str, what: str = "device") -> int | None:
    """The GPU `device` names, or None for `auto` and `cpu`; `what` names the setting in the error."""
    if device in ("auto", "cpu"):
        return None
    name, colon, number = device.partition(":")
    if name != "cuda" or (colon and not (number.isascii() and number.isdigit())):
        raise ClipevalError(f"{what} {device!r}: expected auto, cpu, cuda or cuda:N")
    return int(number or 0)
