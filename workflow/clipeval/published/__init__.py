"""Published numbers shipped as data (data/SOURCES.md): open_clip's results tables and CLIP_benchmark's, and the
check of a run's numbers against them."""
