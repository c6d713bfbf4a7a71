"""After a failed run: each failed job's rule, log file and the last line of that log, read from the run's log.

Snakemake reports a failed job in a block of a dozen lines, among the other jobs' output and followed by its
own shutdown lines; the job's message (a clipeval command's one line) is only in the job's log file. The
workflow's onerror prints these lines, so that the run's output ends with what went wrong and where.
"""

import re
from pathlib import Path

FAILED_RULE = re.compile(r"^Error in rule (\w+):$")
JOB_LOGS = re.compile(r"^ {4}log: (.+) \(check log file\(s\) for error details\)$")
# A log's last line is in its end: a job that failed wrote little after its message.
TAIL_BYTES = 8192
# What a log line may hold that a terminal would act on (escape sequences, a bell): shown escaped.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def failed_jobs(run_log: str) -> list[tuple[str, list[str]]]:
    """(rule, its log files) of each job the run's log reports failed, in order, each once."""
    jobs = []
    for line in run_log.splitlines():
        if match := FAILED_RULE.match(line):
            jobs.append((match.group(1), []))
        elif jobs and not jobs[-1][1] and (match := JOB_LOGS.match(line)):
            jobs[-1][1].extend(match.group(1).split(", "))
    unique = []
    for job in jobs:
        if job not in unique:
            unique.append(job)
    return unique


def last_line(path: Path) -> str | None:
    """The last line of the file with any text, progress bars' carriage returns read as line ends and control
    characters escaped; None for a missing or empty file."""
    try:
        with open(path, "rb") as file:
            file.seek(0, 2)
            file.seek(max(0, file.tell() - TAIL_BYTES))
            tail = file.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in re.split(r"[\r\n]", tail) if line.strip()]
    return CONTROL.sub(lambda match: f"\\x{ord(match.group(0)):02x}", lines[-1]) if lines else None


def failure_lines(run_log: str, directory: Path = Path(".")) -> list[str]:
    """One line for each failed job: `failed: RULE (LOG): its log's last line`, logs relative to `directory`."""
    lines = []
    for rule, logs in failed_jobs(run_log):
        if not logs:
            lines.append(f"failed: {rule} (no log)")
        for log in logs:
            found = last_line(directory / log)
            lines.append(f"failed: {rule} ({log}): {found if found is not None else 'its log is empty or missing'}")
    return lines
