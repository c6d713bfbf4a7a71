"""Re-runs in an experiment with every source format, a trained model and a local-weights model.

The rows of the re-run table (docs/CACHING.md) that the small two-dataset experiment
of test_caching cannot show: each importer's source files, classification
datasets, the protocol and bootstrap seed, a model's arch and its weights
file. And the code fingerprints, checked module by module against what each
job really loaded (listed in the job logs: warm_jobs.module_listing_env).
"""

import json
import os
import re
import subprocess
import sys

import pytest
import torch
from snakemake_runner import (
    copy_experiment,
    copy_workflow,
    edit_config,
    planned_jobs,
    plus,
    run_as_planned,
    run_jobs,
    shared_path,
)
from sources import (
    compositionality_entries,
    write_aro,
    write_cnclip,
    write_coco,
    write_imagefolder,
    write_karpathy,
    write_shapes_cifar,
    write_sugarcrepe,
    write_winoground,
)
from warm_jobs import module_listing_env

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(8)]

RETRIEVAL = ("shapes-1k", "cn", "flickr", "coco")
CLASSIFICATION = ("shapes-classes", "cifar", "folder")
COMPOSITIONALITY = ("sugarcrepe", "winoground", "vg-relation")


def formats_config():
    full = {"protocol": "full"}  # so that metrics.protocol reaches shapes-1k alone
    return {
        "datasets": {
            "shapes-train": {"format": "shapes", "task": "train", "num_images": 128, "seed": 0},
            "shapes-1k": {
                "format": "shapes",
                "task": "retrieval",
                "num_images": 1000,
                "seed": 1,
                "first_image_id": 10000,
            },
            "cn": {
                "format": "cnclip",
                "task": "retrieval",
                "images": "sources/cn_imgs.tsv",
                "texts": "sources/cn_texts.jsonl",
                **full,
            },
            "flickr": {
                "format": "karpathy",
                "task": "retrieval",
                "annotations": "sources/dataset_flickr30k.json",
                "images": "sources/flickr30k-images",
                **full,
            },
            "coco": {
                "format": "coco",
                "task": "retrieval",
                "annotations": "sources/captions_val2017.json",
                "images": "sources/val2017",
                **full,
            },
            "shapes-classes": {
                "format": "shapes",
                "task": "classification",
                "num_images": 30,
                "seed": 2,
                "first_image_id": 20000,
            },
            "cifar": {
                "format": "cifar",
                "task": "classification",
                "batch": "sources/cifar-10-batches-py/test_batch",
                "templates": "sources/cifar-templates.txt",
            },
            "folder": {
                "format": "imagefolder",
                "task": "classification",
                "images": "sources/val",
                "classnames": "sources/classnames.txt",
                "templates": "sources/templates.txt",
            },
            **compositionality_entries(),
        },
        "models": {
            "tiny": {
                "arch": "clipeval-tiny",
                "train": {"dataset": "shapes-train", "epochs": 1, "batch_size": 64, "lr": 0.001, "seed": 0},
            },
            "local": {"arch": "clipeval-tiny", "pretrained": "weights/local.pt"},
        },
        "evaluate": [{"model": "tiny", "dataset": name} for name in RETRIEVAL + CLASSIFICATION + COMPOSITIONALITY]
        + [{"model": "local", "dataset": "flickr"}],
        "extract": {"batch_size": 64, "num_workers": 0, "device": "cpu"},
        "metrics": {"bootstrap": 50},
    }


def write_weights(path, seed):
    import open_clip

    import clipeval.models.open_clip_models  # noqa: F401  registers clipeval-tiny

    torch.manual_seed(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": open_clip.create_model("clipeval-tiny").state_dict()}, path)


def formats_experiment(directory):
    copy_workflow(directory)
    sources = directory / "sources"
    write_cnclip(sources)
    write_karpathy(sources)
    write_coco(sources)
    write_imagefolder(sources)
    write_shapes_cifar(sources)
    write_sugarcrepe(sources / "sugarcrepe")
    write_winoground(sources / "winoground")
    write_aro(sources / "aro")
    write_weights(directory / "weights/local.pt", seed=0)
    edit_config(directory, lambda config: (config.clear(), config.update(formats_config())))
    return directory


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    workdir = formats_experiment(tmp_path_factory.mktemp("formats"))
    ran = run_jobs(workdir, env=module_listing_env())  # every job logs the package modules it loaded
    assert ran == {
        "prepare_shapes": 3,
        "prepare_cnclip": 1,
        "prepare_karpathy": 1,
        "prepare_coco": 1,
        "prepare_cifar": 1,
        "prepare_imagefolder": 1,
        "prepare_sugarcrepe": 1,
        "prepare_winoground": 1,
        "prepare_aro": 1,
        "train": 1,
        "describe_model": 2,
        # both models preprocess alike: one pixel job per dataset
        "decode_pixels": 10,
        "extract_text_features": 8,
        "extract_image_shard": 11,
        "gather_image_features": 11,
        "knn": 10,
        "score_retrieval": 5,
        "encode_classes": 3,
        "score_classification": 3,
        "score_compositionality": 3,
        "compositionality_failures": 3,
        "compare_models": 1,
        "summary": 1,
        "all": 1,
        "report_tables": 1,
        "plot_retrieval": 4,
        "retrieval_failures": 5,
        "plot_classification": 3,
        "classification_failures": 3,
        "plot_comparisons": 1,
    }
    return workdir


def retrieval_jobs(models=1):
    return {
        "extract_text_features": models,
        "extract_image_shard": models,
        "gather_image_features": models,
        "knn": 2 * models,
        "score_retrieval": models,
    }


# A dataset's images decoded once for both models' preprocessing.
PIXELS = {"decode_pixels": 1}
CLASSIFICATION_JOBS = {
    "decode_pixels": 1,
    "extract_image_shard": 1,
    "gather_image_features": 1,
    "encode_classes": 1,
    "score_classification": 1,
}
# Planned because classes.json is re-written, skipped when it comes out the same: the images changed, not the classes.
CLASSIFICATION_JOBS_RUN = {
    "decode_pixels": 1,
    "extract_image_shard": 1,
    "gather_image_features": 1,
    "score_classification": 1,
}
FINISH = {"summary": 1, "all": 1, "report_tables": 1}
# A compositionality set's captions changed: its extraction and its score, nothing else.
COMPOSITIONALITY_JOBS = {
    "extract_text_features": 1,
    "extract_image_shard": 1,
    "gather_image_features": 1,
    "score_compositionality": 1,
}


def report(retrieval_datasets=0, retrieval_pairs=0, classification_datasets=0, classification_pairs=0, compared=0):
    """The report jobs after new scores or features: each dataset's figures, each (model, dataset) pair's
    gallery, each comparison's plot. A classification gallery reads features, not scores."""
    jobs = {
        "plot_retrieval": retrieval_datasets,
        "retrieval_failures": retrieval_pairs,
        "plot_classification": classification_datasets,
        "classification_failures": classification_pairs,
        "plot_comparisons": compared,
    }
    return {rule: count for rule, count in jobs.items() if count}


CLASSIFICATION_REPORT = report(classification_datasets=1, classification_pairs=1)


def edit_file(relative, change):
    def edit(workdir):
        path = workdir / relative
        path.write_bytes(change(path.read_bytes()))

    return edit


def replace_folder_image(workdir):
    first = sorted((workdir / "sources/val/circle").iterdir())[0]
    other = sorted((workdir / "sources/val/square").iterdir())[0]
    first.write_bytes(other.read_bytes())


def move_coco(workdir):
    """COCO's annotations and images moved to another folder, the config's paths with them: the same content."""
    moved = workdir / "moved"
    moved.mkdir()
    for name in ("captions_val2017.json", "val2017"):
        (workdir / "sources" / name).rename(moved / name)
    edit_config(
        workdir,
        lambda c: c["datasets"]["coco"].update(annotations="moved/captions_val2017.json", images="moved/val2017"),
    )


def flip_cifar_label(workdir):
    from sources import write_shapes_cifar as rewrite

    rewrite(workdir / "sources", seed=15)


# row: (change, jobs planned, jobs run when they differ from the plan: at run time Snakemake skips
# a job whose inputs came out with the same content)
ROWS = {
    "karpathy annotations": (
        edit_file("sources/dataset_flickr30k.json", lambda raw: raw.replace(b'"raw": "a ', b'"raw": "one ', 1)),
        plus(
            {"prepare_karpathy": 1}, PIXELS, retrieval_jobs(2), {"compare_models": 1}, FINISH, report(1, 2, compared=1)
        ),
        None,
    ),
    "coco annotations": (
        edit_file("sources/captions_val2017.json", lambda raw: raw.replace(b'"caption": "a ', b'"caption": "one ', 1)),
        plus({"prepare_coco": 1}, PIXELS, retrieval_jobs(), FINISH, report(1, 1)),
        None,
    ),
    "sugarcrepe split file": (
        edit_file(
            "sources/sugarcrepe/sugar-crepe/swap_att.json",
            lambda raw: raw.replace(b'"caption": "', b'"caption": "one ', 1),
        ),
        plus({"prepare_sugarcrepe": 1}, PIXELS, COMPOSITIONALITY_JOBS, FINISH, {"compositionality_failures": 1}),
        None,
    ),
    "winoground examples": (
        edit_file(
            "sources/winoground/examples.jsonl", lambda raw: raw.replace(b'"caption_0": "', b'"caption_0": "one ', 1)
        ),
        plus({"prepare_winoground": 1}, PIXELS, COMPOSITIONALITY_JOBS, FINISH, {"compositionality_failures": 1}),
        None,
    ),
    "aro annotations": (
        edit_file(
            "sources/aro/visual_genome_relation.json",
            lambda raw: raw.replace(b'"true_caption": "', b'"true_caption": "one ', 1),
        ),
        plus({"prepare_aro": 1}, PIXELS, COMPOSITIONALITY_JOBS, FINISH, {"compositionality_failures": 1}),
        None,
    ),
    "image folder file": (
        replace_folder_image,
        plus({"prepare_imagefolder": 1}, CLASSIFICATION_JOBS, FINISH, CLASSIFICATION_REPORT),
        plus({"prepare_imagefolder": 1}, CLASSIFICATION_JOBS_RUN, FINISH, CLASSIFICATION_REPORT),
    ),
    "image folder file touched": (lambda w: os.utime(sorted((w / "sources/val/circle").iterdir())[0]), {}, None),
    "cifar batch": (
        flip_cifar_label,
        plus({"prepare_cifar": 1}, CLASSIFICATION_JOBS, FINISH, CLASSIFICATION_REPORT),
        plus({"prepare_cifar": 1}, CLASSIFICATION_JOBS_RUN, FINISH, CLASSIFICATION_REPORT),
    ),
    "classification dataset content": (
        lambda w: edit_config(w, lambda c: c["datasets"]["shapes-classes"].update(seed=5)),
        plus({"prepare_shapes": 1}, CLASSIFICATION_JOBS, FINISH, CLASSIFICATION_REPORT),
        None,
    ),
    "metrics.protocol": (
        lambda w: edit_config(w, lambda c: c["metrics"].update(protocol="folds-1k")),
        {"score_retrieval": 1, **FINISH, **report(1, 1)},
        None,
    ),
    "metrics.bootstrap_seed": (
        lambda w: edit_config(w, lambda c: c["metrics"].update(bootstrap_seed=1)),
        {
            "score_retrieval": 5,
            "score_classification": 3,
            "score_compositionality": 3,
            "compositionality_failures": 3,
            "compare_models": 1,
            **FINISH,
            **report(4, 5, 3, compared=1),
        },
        None,
    ),
    "coco files moved": (
        lambda w: move_coco(w),
        plus({"prepare_coco": 1}, PIXELS, retrieval_jobs(), FINISH, report(1, 1)),
        None,
    ),
    "local weights file, same path": (
        lambda w: write_weights(w / "weights/local.pt", seed=1),
        plus({"describe_model": 1, "compare_models": 1}, retrieval_jobs(), FINISH, report(1, 1, compared=1)),
        None,
    ),
}


# Each row's plan is checked alone. The rows that change only what planned jobs compute (settings, a weights
# file) run together, as planned. The rows that change a dataset's source files run together too: each
# re-prepares its own dataset, and a prepare job may write what it wrote before (Snakemake then skips the
# jobs after it), so that run is checked against each row's jobs run alone, the shared jobs once.
RUN_TOGETHER = ("metrics.protocol", "metrics.bootstrap_seed", "local weights file, same path")
# Moving COCO's files takes them from under the coco annotations row's edit: planned alone only.
PLANNED_ALONE = ("coco files moved",)
SOURCE_ROWS = tuple(row for row in ROWS if row not in RUN_TOGETHER + PLANNED_ALONE)


@pytest.mark.parametrize("row", list(ROWS))
def test_rerun_row(experiment, tmp_path, row):
    change, planned, _ = ROWS[row]
    workdir = copy_experiment(experiment, tmp_path / "experiment")
    change(workdir)
    assert planned_jobs(workdir) == planned


def once_shared(job_sets):
    """The jobs of several rows that each change their own dataset: their own jobs each, FINISH once."""
    changing = [jobs for jobs in job_sets if jobs]
    total = plus(*changing)
    return {rule: count - (len(changing) - 1) * FINISH.get(rule, 0) for rule, count in total.items()}


def test_the_source_rows_run_together_each_as_alone(experiment, tmp_path):
    workdir = copy_experiment(experiment, tmp_path / "experiment")
    for row in SOURCE_ROWS:
        ROWS[row][0](workdir)
    assert planned_jobs(workdir) == once_shared([ROWS[row][1] for row in SOURCE_ROWS])
    assert run_jobs(workdir) == once_shared([ROWS[row][2] or ROWS[row][1] for row in SOURCE_ROWS])
    assert planned_jobs(workdir) == {}


def test_the_settings_and_weights_rows_run_together_as_planned(experiment, tmp_path):
    workdir = copy_experiment(experiment, tmp_path / "experiment")
    for row in RUN_TOGETHER:
        ROWS[row][0](workdir)
    run_as_planned(workdir, [ROWS[row][1] for row in RUN_TOGETHER])


def test_a_model_arch_change_reextracts_that_model(experiment, tmp_path):
    workdir = copy_experiment(experiment, tmp_path / "experiment")
    edit_config(workdir, lambda c: c["models"]["local"].update(arch="RN50"))
    # Planned only: these weights do not fit RN50, so running would stop at describe_model.
    assert planned_jobs(workdir) == plus(
        {"describe_model": 1, "compare_models": 1}, retrieval_jobs(), FINISH, report(1, 1, compared=1)
    )


# A line of -X importtime, or of a warm job's listing.
PACKAGE_IMPORT = re.compile(r"^(?:import time:.*\|\s+|loaded module: )(clipeval(?:\.\w+)*)\s*$", re.M)


def rule_of_log(path, workdir, config):
    """The rule that wrote a job log, from the log layout of workflow/rules/."""
    parts = path.parts
    stage = parts[0]
    if stage == "prepare":  # prepare/{dataset_key}.log: its format is in the prepared dataset's meta.json
        meta = workdir / "results/datasets" / path.stem / "meta.json"
        return f"prepare_{json.loads(meta.read_text())['source']['format']}"
    if stage == "extract":
        if len(parts) == 3:  # extract/{model_key}/meta.log
            return "describe_model"
        if len(parts) == 6:  # extract/{dataset_key}/pixels/{recipe}/by-{shard_size}/{shard}.log
            return "decode_pixels"
        return {"texts": "extract_text_features", "gather": "gather_image_features"}.get(
            path.stem, "extract_image_shard"
        )
    if stage == "classify":  # classify/{model_key}/{dataset_key}/classes.log
        return "encode_classes"
    if stage == "score":  # score/{experiment}/{model}/{dataset}/{task}.log
        return f"score_{path.stem}"
    if stage == "report":  # report/{experiment}/tables.log, …/{dataset}/plots.log, …/{dataset}/{model}/failures.log
        classification = len(parts) > 3 and config["datasets"][parts[2]]["task"] == "classification"
        return {
            "tables": "report_tables",
            "comparisons": "plot_comparisons",
            "plots": "plot_classification" if classification else "plot_retrieval",
            "failures": "classification_failures" if classification else "retrieval_failures",
            "choice-failures": "compositionality_failures",
        }[path.stem]
    return {"train": "train", "knn": "knn", "compare": "compare_models", "summary": "summary"}[stage]


def modules_loaded_by_rule(workdir):
    config = formats_config()
    loaded = {}
    for log in (workdir / "logs").rglob("*.log"):
        rule = rule_of_log(log.relative_to(workdir / "logs"), workdir, config)
        modules = set(PACKAGE_IMPORT.findall(log.read_text()))
        if "clipeval.cli" in modules:
            modules.add("clipeval.__main__")  # `python -m clipeval` runs it without an import to trace
        loaded.setdefault(rule, set()).update(modules)
    return loaded


def package_modules(workdir):
    package = workdir / "workflow/clipeval"
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        yield ".".join(parts), path


COMMAND = re.compile(r"^python -m clipeval (prepare [a-z]+|[a-z-]+)")


def command_of_rule(workdir):
    """{rule: the clipeval subcommand its jobs ran (with its format, for prepare)}, from Snakemake's records."""
    commands = {}
    for record in (workdir / ".snakemake/metadata").iterdir():
        job = json.loads(record.read_text())
        found = COMMAND.match(job.get("shellcmd") or "")
        if found:
            commands.setdefault(job["rule"], set()).add(found.group(1))
    assert all(len(names) == 1 for names in commands.values()), commands
    return {rule: names.pop() for rule, names in commands.items()}


def entry_modules_by_rule(workdir, commands):
    """Each rule's entry modules as its `code` param takes them: a rule whose command builds the job's model
    (model_code_fingerprint in the rule files) adds its model's backend, which models/build.py imports by name."""
    from clipeval.models.pretrained import parse_model_name
    from clipeval.planning.codegraph import command_entry_modules

    rules = "".join(path.read_text() for path in (workdir / "workflow/rules").glob("*.smk"))
    building = set(re.findall(r'model_code_fingerprint\("([a-z-]+)"\)', rules))
    backends = {parse_model_name(entry["arch"]).backend.module for entry in formats_config()["models"].values()}
    return {
        rule: command_entry_modules(*command.split(), model_backends=backends if command in building else ())
        for rule, command in commands.items()
    }


def test_each_rule_fingerprints_exactly_the_modules_its_jobs_imported(experiment):
    """The code a rule's fingerprint covers (its command's import closure) is what its jobs really loaded."""
    from clipeval.planning.codegraph import CodeGraph

    loaded = modules_loaded_by_rule(experiment)
    assert loaded["score_retrieval"] >= {
        "clipeval.retrieval.recall",
        "clipeval.retrieval.ranks",
        "clipeval.commands.score_retrieval",
    }
    commands = command_of_rule(experiment)
    assert set(commands) == set(loaded) - {"all"}
    graph = CodeGraph(experiment / "workflow/clipeval")
    entries = entry_modules_by_rule(experiment, commands)
    closures = {rule: set(graph.closure(entries[rule])) for rule in commands}
    assert {rule: closures[rule] ^ loaded[rule] for rule in commands} == {rule: set() for rule in commands}


def test_editing_any_module_changes_the_code_param_of_exactly_the_rules_that_imported_it(experiment, tmp_path):
    """Every module of the package gets a comment in turn: the code fingerprint (each rule's `code` param) must
    change for exactly the rules whose jobs imported it. That a changed `code` param re-runs the job and what
    follows it is the re-run table's module rows (test_caching.py), run through Snakemake."""
    import shutil

    from clipeval.planning.codegraph import CodeGraph

    loaded = modules_loaded_by_rule(experiment)
    commands = command_of_rule(experiment)
    package = shutil.copytree(experiment / "workflow/clipeval", tmp_path / "clipeval")

    entries = entry_modules_by_rule(experiment, commands)

    def fingerprints():
        # A graph per edit, as each plan makes one, keeping the imports of unchanged files as plans keep them.
        graph = CodeGraph(package, cache_file=tmp_path / "import-graph.json")
        digests = {rule: graph.digest(entries[rule]) for rule in commands}
        graph.save_cache()
        return digests

    before = fingerprints()
    mismatches = []
    for name, path in package_modules(experiment):
        source = package / path.relative_to(experiment / "workflow/clipeval")
        original = source.read_text()
        source.write_text(original + "\n# edited\n")
        changed = {rule for rule, digest in fingerprints().items() if digest != before[rule]}
        source.write_text(original)
        users = {rule for rule in commands if name in loaded.get(rule, set())}
        if changed != users:
            mismatches.append((name, sorted(changed), sorted(users)))
    assert mismatches == []


def test_adding_a_subcommand_reruns_nothing(experiment, tmp_path):
    workdir = copy_experiment(experiment, tmp_path / "experiment")
    (workdir / "workflow/clipeval/commands/count_images.py").write_text(
        'HELP = "count a dataset\'s images"\n\n\ndef add_arguments(parser):\n    parser.add_argument("store")\n\n\n'
        "def run(args):\n    from clipeval.data.image_lmdb import ImageStore\n\n    print(len(ImageStore(args.store).image_ids()))\n"
    )
    assert planned_jobs(workdir) == {}
    result = subprocess.run(
        [sys.executable, "-m", "clipeval", "count-images", shared_path(workdir, "dataset_images", dataset="cn")],
        cwd=workdir,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(workdir / "workflow")},
    )
    assert (result.returncode, result.stdout) == (0, "40\n"), result.stderr
