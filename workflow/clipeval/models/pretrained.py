"""Where a model's weights come from: an open_clip pretrained tag, a checkpoint path, or a folder that the
arch names (open_clip's `local-dir:DIR`, `hf-hub:ORG/REPO` in the Hugging Face cache, or a transformers CLIP or
SigLIP folder, `hf-transformers:DIR`). No heavy imports: the workflow's planning (common.smk) uses it too."""

from pathlib import Path

CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".npz", ".ckpt")
LOCAL_DIR_PREFIX, HF_HUB_PREFIX, TRANSFORMERS_PREFIX = "local-dir:", "hf-hub:", "hf-transformers:"
# Chinese-CLIP's own models (cn_clip), by its names: cn-clip:ViT-B-16 with a local checkpoint.
CNCLIP_PREFIX = "cn-clip:"


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
    """The folder an arch loads its weights (and config) from, if it names one: local-dir's or hf-transformers',
    or the cached snapshot of an hf-hub model (None when it is not cached)."""
    for prefix in (LOCAL_DIR_PREFIX, TRANSFORMERS_PREFIX):
        if arch.startswith(prefix):
            return Path(arch[len(prefix) :])
    if arch.startswith(HF_HUB_PREFIX):
        return hub_snapshot(arch[len(HF_HUB_PREFIX) :])
    return None


def is_transformers(arch: str) -> bool:
    return arch.startswith(TRANSFORMERS_PREFIX)


def cnclip_name(arch: str) -> str | None:
    """The Chinese-CLIP model a `cn-clip:NAME` arch names, else None."""
    return arch[len(CNCLIP_PREFIX) :] if arch.startswith(CNCLIP_PREFIX) else None


def is_open_clip(arch: str) -> bool:
    """Built by open_clip (its names, local-dir: and hf-hub:), not by transformers or cn_clip."""
    return model_backend(arch) is None


def model_backend(arch: str) -> str | None:
    """The module of clipeval.models that builds an arch open_clip does not (loaded by name, so that the code
    fingerprints of open_clip models' jobs do not cover it); None for open_clip's."""
    if is_transformers(arch):
        return "transformers_models"
    if cnclip_name(arch) is not None:
        return "cnclip_models"
    return None
