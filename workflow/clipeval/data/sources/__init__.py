"""Importers, one module per source format a benchmark ships in."""
