"""What the workflow plans from a config: its pairs, checks, records, artifact paths, digests and fingerprints.

Plain functions over the config dict, so they are unit-tested without
Snakemake; workflow/rules/ calls them and keeps only what must be Snakemake.
"""
