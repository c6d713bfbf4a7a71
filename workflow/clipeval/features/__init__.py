"""Feature extraction and the feature files it writes."""
