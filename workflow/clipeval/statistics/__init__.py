"""Bootstrap intervals and paired comparisons of models."""
