"""A training run's checkpoint files: the step a file's name carries, and whether a file is written whole."""

import json
import re
import struct
import zipfile
from pathlib import Path

STEP = re.compile(r"\d+")
# torch.save's archive (the default since torch 1.6; pytorch_model.bin too) is a zip file, whose central
# directory is written last.
ZIP_MAGIC = b"PK\x03\x04"
SAFETENSORS_SUFFIX = ".safetensors"
# A safetensors file: the length of its JSON header as a little-endian u64, the header, then the tensors' bytes.
SAFETENSORS_LENGTH = struct.Struct("<Q")


def checkpoint_step(path: Path) -> int | None:
    """The step a checkpoint's name carries: the last number in its name before the suffix (epoch_12.pt: 12,
    step-5000.pt: 5000); None when there is none."""
    numbers = STEP.findall(Path(path).stem)
    return int(numbers[-1]) if numbers else None


def member_name(series: str, path) -> str:
    """The model a series makes of one of its files: SERIES.FILE_STEM (run.epoch_3)."""
    return f"{series}.{Path(path).stem}"


def written_whole(path: Path) -> bool:
    """Whether the file ends where its format says it does: a zip archive (torch.save's) has its central
    directory, a safetensors file holds the bytes its header declares. A file of another format (a legacy
    pickle) cannot tell and counts as whole: then only its settling (following/watch.py) decides. A file that
    cannot be read, or too short to tell its format, is not whole."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            start = handle.read(len(ZIP_MAGIC))
        if ZIP_MAGIC.startswith(start):  # a zip archive, or too short to tell yet
            with zipfile.ZipFile(path):
                return True
        if path.suffix == SAFETENSORS_SUFFIX:
            return _safetensors_whole(path)
        return True
    except (OSError, zipfile.BadZipFile):
        return False


def _safetensors_whole(path: Path) -> bool:
    size = path.stat().st_size
    with open(path, "rb") as handle:
        prefix = handle.read(SAFETENSORS_LENGTH.size)
        if len(prefix) < SAFETENSORS_LENGTH.size:
            return False
        (length,) = SAFETENSORS_LENGTH.unpack(prefix)
        if SAFETENSORS_LENGTH.size + length > size:
            return False
        try:
            header = json.loads(handle.read(length))
            ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return False
    return size == SAFETENSORS_LENGTH.size + length + max(ends, default=0)
