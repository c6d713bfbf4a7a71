"""open_clip models: building them, checkpoints, training, and the pinned numerics."""
