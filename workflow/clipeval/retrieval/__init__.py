"""Image-text retrieval: the ranking rule, top-k search, ground truth and metrics."""
