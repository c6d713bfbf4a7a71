"""A model's name and where its weights come from: an arch parsed once into the backend that builds it and what
it names (an open_clip model, open_clip's `local-dir:DIR`, `hf-hub:ORG/REPO` in the Hugging Face cache, a
transformers CLIP or SigLIP folder `hf-transformers:DIR`, a Chinese-CLIP model `cn-clip:NAME`), and a
`pretrained` that is an open_clip tag or a checkpoint path. No heavy imports: the workflow's planning
(common.smk) uses it too."""

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Backend:
    """A module of clipeval.models that builds models (the backend contract: docs/ARCHITECTURE.md), and what
    the workflow may do with its models, known without importing it."""

    module: str
    # Distributions whose installed versions shape its models' outputs, beside each command's own LIBRARIES.
    libraries: tuple[str, ...]
    # clipeval fine-tunes its models (models/training.py builds open_clip models only).
    trainable: bool
    # Its eval preprocessing is open_clip's, which has a pixel recipe (features/pixels.py) and takes a config's
    # preprocess overrides.
    open_clip_preprocessing: bool


OPEN_CLIP = Backend("open_clip_models", (), trainable=True, open_clip_preprocessing=True)
BACKENDS = {
    backend.module: backend
    for backend in (
        OPEN_CLIP,
        Backend("transformers_models", ("transformers", "tokenizers"), trainable=False, open_clip_preprocessing=False),
        Backend("cnclip_models", ("cn_clip",), trainable=False, open_clip_preprocessing=False),
    )
}


@dataclass(frozen=True)
class Scheme:
    """How an arch names its model: a prefix, the backend that builds it, and where its weights are."""

    prefix: str
    backend: Backend
    # "path": the identifier is a folder; "hub": a Hugging Face repository, loaded from its cached snapshot.
    folder: str | None = None
    # The file that makes a "path" folder a model of this scheme.
    marker: str | None = None


SCHEMES = (
    Scheme(LOCAL_DIR_PREFIX, OPEN_CLIP, folder="path", marker="open_clip_config.json"),
    Scheme(HF_HUB_PREFIX, OPEN_CLIP, folder="hub"),
    Scheme(TRANSFORMERS_PREFIX, BACKENDS["transformers_models"], folder="path", marker="config.json"),
    Scheme(CNCLIP_PREFIX, BACKENDS["cnclip_models"]),
)
OPEN_CLIP_NAME = Scheme("", OPEN_CLIP)


@dataclass(frozen=True)
class ModelName:
    """A config's `arch`, parsed once: its scheme (and so its backend) and what it names, an open_clip model
    name, a folder, a hub repository or a Chinese-CLIP model."""

    arch: str
    scheme: Scheme
    identifier: str

    @property
    def backend(self) -> Backend:
        return self.scheme.backend

    @property
    def folder(self) -> Path | None:
        """The folder the model loads its weights (and config) from, if it names one: local-dir's or
        hf-transformers', or the cached snapshot of an hf-hub model (None when it is not cached)."""
        if self.scheme.folder == "path":
            return Path(self.identifier)
        if self.scheme.folder == "hub":
            return hub_snapshot(self.identifier)
        return None


def parse_model_name(arch: str) -> ModelName:
    for scheme in SCHEMES:
        if arch.startswith(scheme.prefix):
            return ModelName(arch, scheme, arch[len(scheme.prefix) :])
    return ModelName(arch, OPEN_CLIP_NAME, arch)
