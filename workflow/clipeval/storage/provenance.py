"""What produced a result: library versions, weights and data identities, config.

Only deterministic values belong here: two runs from scratch must write the
same bytes.
"""

from importlib import metadata

from clipeval.storage.jsonl import parse_json_option, read_json

TRACKED_DISTRIBUTIONS = ("clipeval", "torch", "open_clip_torch", "faiss-cpu", "faiss-gpu", "numpy", "lmdb", "pillow")


def library_versions(names=TRACKED_DISTRIBUTIONS) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def result_provenance(dataset_meta=None, model_meta=None, config_json=None) -> dict:
    """What a metrics file records about its making: versions, data and weights identity, config."""
    return {
        "versions": library_versions(),
        "dataset": read_json(dataset_meta) if dataset_meta else None,
        "model": read_json(model_meta) if model_meta else None,
        "config": parse_json_option(config_json, "--config"),
    }
