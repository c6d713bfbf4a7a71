"""Zero-shot classification."""
