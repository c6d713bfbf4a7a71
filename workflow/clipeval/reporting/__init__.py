"""Summaries and provenance of results."""
