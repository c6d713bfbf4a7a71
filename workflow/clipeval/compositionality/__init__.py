"""Compositionality: each image of an example chooses its caption, each caption its image."""
