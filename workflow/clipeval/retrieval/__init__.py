"""Image-text retrieval: top-k search, ground truth and metrics."""
