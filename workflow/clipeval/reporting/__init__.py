"""Summaries, tables and figures of results: the report."""
