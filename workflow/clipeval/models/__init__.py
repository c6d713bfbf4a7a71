"""open_clip models and the other backends: building them, checkpoints, training."""
