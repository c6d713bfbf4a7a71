"""Where a model's weights come from: an open_clip pretrained tag, a checkpoint path, or a folder that the
arch names (open_clip's `local-dir:DIR`, or `hf-hub:ORG/REPO` in the Hugging Face cache). No heavy imports:
the workflow's planning (common.smk) uses it too."""

from pathlib import Path

CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".npz", ".ckpt")
LOCAL_DIR_PREFIX, HF_HUB_PREFIX = "local-dir:", "hf-hub:"


def is_checkpoint_path(pretrained: str) -> bool:
    return "/" in pretrained or pretrained.endswith(CHECKPOINT_SUFFIXES)


def hub_snapshot_parent(repo: str) -> Path:
    """A hub model's folder in the Hugging Face cache, where open_clip's downloads look."""
    from huggingface_hub.constants import HF_HUB_CACHE  # a light import

    return Path(HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}"


def hub_snapshot(repo: str) -> Path | None:
    """The cached snapshot of a hub model's main revision (what open_clip loads offline), if there is one."""
    cached = hub_snapshot_parent(repo)
    try:
        revision = (cached / "refs" / "main").read_text().strip()
    except OSError:
        return None
    snapshot = cached / "snapshots" / revision
    return snapshot if revision and snapshot.is_dir() else None


def weights_folder(arch: str) -> Path | None:
    """The folder an arch loads its weights (and config) from, if it names one: local-dir's, or the cached
    snapshot of an hf-hub model (None when it is not cached)."""
    if arch.startswith(LOCAL_DIR_PREFIX):
        return Path(arch[len(LOCAL_DIR_PREFIX) :])
    if arch.startswith(HF_HUB_PREFIX):
        return hub_snapshot(arch[len(HF_HUB_PREFIX) :])
    return None
