"""The ranks records the score stages write (--ranks-output): each query's or image's rank, which paired
comparisons resample and the report's figures and galleries read."""

from clipeval.errors import ClipevalError
from clipeval.storage.jsonl import read_json
from clipeval.tasks import TASKS


def read_ranks_record(path) -> dict:
    """A ranks record as the score commands write it (--ranks-output), or a one-line error."""
    record = read_json(path)
    task = TASKS.get(record.get("task"))
    keys = task.record_keys if task else None
    if keys is None or any(key not in record for key in keys):
        raise ClipevalError(f"{path}: not a ranks record (the score commands write one with --ranks-output)")
    return record
