"""`clipeval follow`: a training run's checkpoints evaluated as they land, each once it is written whole."""

# The config key of the file listing the checkpoints a series may take (config/schema.yaml), which a follow
# writes and planning/series.py reads.
READY_KEY = "ready_checkpoints"
