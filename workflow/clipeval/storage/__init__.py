"""How artifacts are written and read: atomic outputs, jsonl, ids."""
