"""Datasets: the image LMDB, captions, the prepared dataset directory, and the source formats."""
