"""clipeval: evaluate CLIP-style image-text models on retrieval benchmarks."""

__version__ = "0.1.0"
