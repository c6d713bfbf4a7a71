"""Tell an open_clip pretrained tag from a checkpoint path. No heavy imports:
the workflow's planning (common.smk) uses it too."""

CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".npz", ".ckpt")


def is_checkpoint_path(pretrained: str) -> bool:
    return "/" in pretrained or pretrained.endswith(CHECKPOINT_SUFFIXES)
