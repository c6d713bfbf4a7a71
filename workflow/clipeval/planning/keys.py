"""The keys shared artifacts are stored under (planning/artifacts.py): a digest of the definition that decides
an artifact's content, so that equal definitions share one artifact whatever a config calls them."""

import hashlib
import json

# Hex digits of sha256 kept: 48 bits, so two of the few thousand definitions a
# results folder sees collide with a chance of about one in 10^7.
KEY_LENGTH = 12


def definition_key(definition) -> str:
    """The key of a definition: any JSON value, its mappings compared regardless of key order."""
    return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:KEY_LENGTH]
