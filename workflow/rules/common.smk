# What every stage needs from Snakemake: the package on the path, the shell
# prefix, the config checked and read into a Plan (clipeval/planning/), code
# fingerprints, and speed knobs. Each stage's input functions are in inputs.smk.

import functools
import json
import shlex
import sys
from pathlib import Path

import yaml
from snakemake.settings.types import DeploymentMethod

PACKAGE_DIR = Path(workflow.basedir) / "workflow" / "clipeval"
sys.path.insert(0, str(PACKAGE_DIR.parent))
from clipeval.data.sources import FILE, FOLDER, format_names
from clipeval.errors import ClipevalError
from clipeval.experiments import (
    experiment_dir,
    experiment_folder,
    read_record,
    record_path,
    recorded_config_files,
)
from clipeval.features.pixels import RECIPE_PATTERN as PIXEL_RECIPE_PATTERN
from clipeval.features.sharding import pixel_shards_read, shard_count
from clipeval.numerics import PORTABLE_THREADS
from clipeval.planning import fingerprints
from clipeval.planning.argument_files import argument_file
from clipeval.planning.artifacts import ARTIFACTS, RESULTS, names_matching
from clipeval.planning.checks import check_cores, check_plan
from clipeval.planning.codegraph import CodeGraph
from clipeval.planning.config_errors import config_error, fill_defaults, oversized_error
from clipeval.storage.config_files import alias_error, duplicate_key_error, yte_error
from clipeval.planning.model_checks import check_in_subprocess, check_models
from clipeval.planning.content_digests import file_digest, folder_digest
from clipeval.planning.failed_jobs import failure_lines
from clipeval.planning.idle_timers import cancel_idle_timers
from clipeval.planning.plan import SOURCE_FORMATS, ConfigError, Plan, fill_metric_defaults
from clipeval.planning.series import expand_checkpoint_series
from clipeval.storage.jsonl import write_json
from clipeval.tasks import TASKS
from clipeval.warm_jobs.decide import wanted as wanted_warm_jobs
from clipeval.warm_jobs.manager import started as started_warm_jobs

ENV_FILE = "../../envs/clipeval.yaml"

# Rules run `python -m clipeval` from this checkout, so a conda environment
# (--sdm conda) needs only the dependencies, not an install of clipeval.
# Without conda, jobs use the Python that runs Snakemake (a virtualenv's
# snakemake works without activating the virtualenv).
_use_conda = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


def job_prefix(first_on_path=()):
    """What each job's shell runs first: the package on PYTHONPATH, and `first_on_path` then this Python's
    folder first on PATH (not under conda)."""
    folders = [*map(str, first_on_path), str(Path(sys.executable).parent)]
    path = "" if _use_conda else f"export PATH={':'.join(map(shlex.quote, folders))}:$PATH; "
    # Braces are doubled: Snakemake formats the prefix like a shell command.
    return f"set -euo pipefail; export PYTHONPATH={shlex.quote(str(PACKAGE_DIR.parent))}${{{{PYTHONPATH:+:$PYTHONPATH}}}}; {path}"


shell.prefix(job_prefix())

# Speed knobs change how fast a stage runs, never what it writes. They reach
# rules as resources, which Snakemake does not compare between runs, so
# changing one re-runs nothing. Anything else a stage reads must be a param.
# `extract.pixels` only decides whether decoded pixels are kept on disk:
# extraction makes the same bits from them as from the images.
SPEED_KNOBS = {
    "extract": ("batch_size", "num_workers", "device", "pixels"),
    "knn": ("device",),
}

# Threads a training or extraction job computes with (under the portable
# numerics profile, always this many), so the scheduler reserves what it uses.
COMPUTE_THREADS = PORTABLE_THREADS


def array_job_threads(wildcards):
    """The threads of a numpy or FAISS job whose bytes do not depend on them (knn, score-retrieval): a quarter
    of a local run's cores, at least two, and two on a cluster. On a 16-core GPU node a sweep's score jobs,
    each given every core, ran one at a time, slower than side by side."""
    return max(COMPUTE_THREADS, (local_cores() or 0) // 4)


def decode_threads(wildcards):
    """decode-pixels' processes, each decoding images: on a local run every core the extraction job beside it
    leaves (at least as many as it takes), on a cluster `extract.num_workers` (at least one)."""
    cores = local_cores()
    if cores is None:
        return max(1, config["extract"]["num_workers"])
    return max(COMPUTE_THREADS, cores - COMPUTE_THREADS)


def decode_knobs():
    """extract's speed knobs for decode-pixels, whose loader processes are its threads (`num_workers` is the
    resource its command reads, so that a change of the cores re-runs nothing)."""
    return {**speed_knobs("extract"), "num_workers": lambda wildcards, threads: threads}


def speed_knobs(section):
    return {knob: as_resource(config[section][knob]) for knob in SPEED_KNOBS[section]}


def as_resource(setting):
    """A resource is a number or a string: a switch becomes yes or no."""
    if isinstance(setting, bool):
        return "yes" if setting else "no"
    return setting


# Each module's imports, as read from its content, are kept between plans in Snakemake's own folder.
CODE_GRAPH = CodeGraph(PACKAGE_DIR, cache_file=Path(".snakemake/clipeval/import-graph.json"))


def code_fingerprint(command, source_format=None, model_backends=()):
    return fingerprints.code_fingerprint(CODE_GRAPH, command, source_format, model_backends)


def model_code_fingerprint(command):
    """A param: the code fingerprint of a command that builds the job's model, with its backend's module."""

    def fingerprint(wildcards):
        return code_fingerprint(command, model_backends=PLAN.model_backends([model_of(wildcards)]))

    return fingerprint


def fail(message, kind="config error"):
    """Stop planning with the one line a user needs: raised as an exception, Snakemake would add the file, line
    and frames of this function to it, which point at the workflow, not at the config."""
    print(f"{kind}: {message}", file=sys.stderr)
    raise SystemExit(1)


def written_or_fail(write, *args):
    """write(*args), or the one line of what the machine refused (a full disk, a read-only folder)."""
    try:
        return write(*args)
    except ClipevalError as error:  # storage/atomic.py names the file a failed write() does not
        fail(str(error), kind="error")
    except OSError as error:
        fail(f"{error.filename}: cannot write ({error.strerror or error})", kind="error")


def read_schema():
    """config/schema.yaml, parsed by libyaml where PyYAML has it (ten times the pure-Python parser's speed)."""
    text = (Path(workflow.basedir) / "config/schema.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def check_schema(schema):
    for path in config_files():
        message = yte_error(path) or alias_error(path) or duplicate_key_error(path)
        if message:
            fail(message)
    message = oversized_error(config) or config_error(config, schema, list(format_names()))
    if message:
        fail(message)


def config_files():
    """The config files of this run (the default experiment's when none is given), relative to the working
    directory when inside it: Snakemake hands them over as absolute paths, which would differ between copies."""
    return recorded_config_files(workflow.config_settings.configfiles)


def local_cores():
    """The cores a run schedules its jobs on, where Snakemake runs them here; None under a cluster executor
    (each job gets its own threads) and inside a cluster's job. Known once the run starts (onstart): while
    the workflow is read, a lint or a dry run without --cores reads as one core."""
    if not workflow.local_exec or workflow.remote_exec:
        return None
    return workflow.cores


def checked_plan():
    """The validated config, its derived defaults filled in, read into a Plan and checked, writing the
    experiment folder that is its own (experiments.experiment_folder)."""
    fill_metric_defaults(config)
    try:
        expand_checkpoint_series(config)
        plan = Plan(config, config_files())
        check_plan(plan)
        configured = plan.configured_experiment_name()
        plan.experiment = experiment_folder(configured, plan.config_files, RESULTS, config["replace"])
    except ClipevalError as error:
        fail(str(error))
    if plan.experiment != configured:
        holder = record_path(RESULTS, configured)
        print(
            f"note: experiment {configured!r} is the experiment of {', '.join(read_record(holder)['config_files'])}"
            f" ({holder}); this config's results go to {experiment_dir(RESULTS, plan.experiment)}"
            " (replace: true would take the name over)",
            file=sys.stderr,
        )
    return plan


def check_cores_as_the_run_starts():
    try:
        check_cores(config["numerics"], local_cores())
    except ConfigError as error:
        fail(str(error))


WARM_JOBS = None


def start_warm_jobs():
    """Jobs of a local run fork from servers that imported their libraries already (clipeval/warm_jobs/);
    elsewhere, or with CLIPEVAL_WARM_JOBS=0, each job starts its own interpreter. The same bytes either way."""
    global WARM_JOBS
    if wanted_warm_jobs(local_cores(), workflow.deployment_settings.deployment_method):
        return
    WARM_JOBS = started_warm_jobs(config["numerics"], Path("logs/warm_jobs.log"))
    if WARM_JOBS is not None:
        shell.prefix(job_prefix([WARM_JOBS.bin]))


def stop_warm_jobs():
    if WARM_JOBS is not None:
        WARM_JOBS.close()


def end_of_run():
    """After the last job (onsuccess, onerror): the warm jobs' servers stopped, and Snakemake's idle timers
    cancelled, which its process would otherwise wait up to a second for (planning/idle_timers.py)."""
    stop_warm_jobs()
    cancel_idle_timers()


def print_failed_jobs(run_logs):
    """Each failed job's rule, log and message, where the run's output ends (planning/failed_jobs.py).
    `run_logs`: the run's log files, as Snakemake hands them to onerror."""
    for run_log in run_logs or ():
        for line in failure_lines(Path(run_log).read_text(encoding="utf-8", errors="replace")):
            print(line, file=sys.stderr)


def check_models_as_the_run_starts():
    """Each model's arch, weights and precision, checked before the first job (planning/model_checks.py).
    Not under --sdm conda, whose Snakemake may lack torch: the jobs check the same themselves."""
    if _use_conda:
        return
    try:
        check_models(
            PLAN,
            check_device=local_cores() is not None,
            content_digest=content_digest,
            code=code_fingerprint("check-models", model_backends=PLAN.model_backends(list(config["models"]))),
            run_check=functools.partial(
                check_in_subprocess,
                package_parent=PACKAGE_DIR.parent,
                first_on_path=[WARM_JOBS.bin] if WARM_JOBS else [],
                threads=min(COMPUTE_THREADS, local_cores() or 1),
            ),
        )
    except ConfigError as error:
        fail(str(error))


def write_experiment_record():
    """Records what this experiment defines once a run of it succeeded (onsuccess: never in a dry run), which
    makes its name this config's: a failed first run holds nothing."""
    written_or_fail(write_json, record_path(RESULTS, PLAN.experiment_name()), PLAN.experiment_record())
