"""How long a run takes to plan, against Snakemake's own start, and the planning steps clipeval does itself.

A small run's first seconds go to planning: Snakemake starts (imports, plugins), reads the workflow, and
clipeval checks the config and fingerprints each rule's code. The floor is a dry run of a one-rule workflow
(Snakemake's start alone); the dry run of the default experiment, nothing done yet, is shown against it, with
the difference: what clipeval's planning adds. Then each step of that difference that has a faster way, timed
both ways in this process: the schema read by PyYAML's pure-Python parser or by libyaml, and the config
validated with its defaults filled by Snakemake's validate() (which reads the schema file again) or from the
schema already read; and every rule's code fingerprint, with each module's imports parsed by ast or read
from the cache a plan leaves in .snakemake/.
"""

import argparse
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

import yaml
from measure import best_seconds, print_table, run_command

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))
WORKFLOW_FILES = ("Snakefile", "config", "workflow", "envs", "profiles")
ONE_RULE = 'rule all:\n    output: "done.txt"\n    shell: "touch {output}"\n'


PACKAGE_DIR = REPO / "workflow/clipeval"


def fingerprint_every_rule(graph, save=False) -> None:
    """The code fingerprint of every command, as a plan takes one for each rule."""
    from clipeval.cli import command_names
    from clipeval.planning.fingerprints import code_fingerprint

    for command in command_names():
        code_fingerprint(graph, command)
    if save:
        graph.save_cache()


def dry_run_seconds(folder: Path, repeats: int) -> float:
    with contextlib.chdir(folder):
        return run_command([sys.executable, "-m", "snakemake", "--dry-run", "--quiet", "all"], repeats)[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each; the fastest counts")
    args = parser.parse_args(argv)
    from snakemake.utils import validate

    from clipeval.planning.codegraph import CodeGraph
    from clipeval.planning.config_errors import fill_defaults

    with tempfile.TemporaryDirectory() as temporary:
        floor_folder, workflow_folder = Path(temporary) / "one-rule", Path(temporary) / "clipeval"
        floor_folder.mkdir()
        (floor_folder / "Snakefile").write_text(ONE_RULE)
        workflow_folder.mkdir()
        for name in WORKFLOW_FILES:
            source = REPO / name
            copy = shutil.copytree if source.is_dir() else shutil.copy
            copy(
                source,
                workflow_folder / name,
                **({"ignore": shutil.ignore_patterns("__pycache__")} if source.is_dir() else {}),
            )
        floor = dry_run_seconds(floor_folder, args.repeats)
        planned = dry_run_seconds(workflow_folder, args.repeats)

    schema_text = (REPO / "config/schema.yaml").read_text(encoding="utf-8")
    config_text = (REPO / "config/config.yaml").read_text(encoding="utf-8")
    pure = best_seconds(lambda: yaml.load(schema_text, Loader=yaml.SafeLoader), args.repeats)
    libyaml = best_seconds(lambda: yaml.load(schema_text, Loader=yaml.CSafeLoader), args.repeats)
    schema = yaml.load(schema_text, Loader=yaml.CSafeLoader)
    snakemakes = best_seconds(
        lambda: validate(yaml.safe_load(config_text), str(REPO / "config/schema.yaml")), args.repeats
    )
    ours = best_seconds(lambda: fill_defaults(yaml.safe_load(config_text), schema), args.repeats)
    with tempfile.TemporaryDirectory() as temporary:
        cache = Path(temporary) / "import-graph.json"
        fingerprint_every_rule(CodeGraph(PACKAGE_DIR, cache_file=cache), save=True)
        parsing = best_seconds(lambda: fingerprint_every_rule(CodeGraph(PACKAGE_DIR)), args.repeats)
        cached = best_seconds(lambda: fingerprint_every_rule(CodeGraph(PACKAGE_DIR, cache_file=cache)), args.repeats)

    print_table(
        "Planning: a dry run of the default experiment against Snakemake's own start",
        ["what", "seconds", "× the floor"],
        [
            ["floor: dry run of a one-rule workflow", f"{floor:.2f}", "1.00"],
            ["clipeval: dry run of the default experiment", f"{planned:.2f}", f"{planned / floor:.2f}"],
            ["what clipeval's planning adds", f"{planned - floor:.2f}", ""],
        ],
    )
    print_table(
        "Planning steps, the way the workflow takes them against the slower way",
        ["step", "slower way (s)", "the workflow's (s)", "×"],
        [
            [
                "read config/schema.yaml: pure-Python parser, then libyaml",
                f"{pure:.3f}",
                f"{libyaml:.3f}",
                f"{libyaml / pure:.2f}",
            ],
            [
                "every command's code fingerprint: imports parsed by ast, then read from the cache",
                f"{parsing:.3f}",
                f"{cached:.3f}",
                f"{cached / parsing:.2f}",
            ],
            [
                "validate, defaults filled: Snakemake's validate(), then fill_defaults",
                f"{snakemakes:.3f}",
                f"{ours:.3f}",
                f"{ours / snakemakes:.2f}",
            ],
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
