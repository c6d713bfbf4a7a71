# clipeval: evaluate CLIP-style models on image-text retrieval and zero-shot classification.
# Run: snakemake --cores all   (see README.md)

from snakemake.utils import min_version

min_version("8.20")


# The default experiment, unless `--configfile` names another: an example
# config replaces it rather than adding to its datasets and models.
if not workflow.config_settings.configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


# The config against config/schema.yaml before any rule reads it: the first
# error as one line naming the entry and key (common.smk). Then the schema's
# defaults filled in as Snakemake's validate() does (config_errors.py), the
# defaults that derive from other keys, and the checks that span sections and
# the files the config names.
SCHEMA = read_schema()
check_schema(SCHEMA)
fill_defaults(config, SCHEMA)
PLAN = checked_plan()


include: "workflow/rules/inputs.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/extract.smk"
include: "workflow/rules/knn.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/classify.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/report.smk"


# `snakemake --report FILE.html`: this page opens it; the figures and tables
# are the outputs marked with report() in report.smk.
report: "workflow/report/workflow.rst"


# The rules' code fingerprints are known: the imports read for them are kept
# for the next plan (common.smk).
CODE_GRAPH.save_cache()


# Under a cluster profile these run on the submitting node: each is seconds
# of work, less than a job's wait in the queue.
localrules:
    all,
    summary,
    compare_models,
    score_suite,
    describe_model,
    describe_features_model,
    report_tables,
    plot_retrieval,
    plot_classification,
    plot_comparisons,
    plot_series,
    plot_suite,
    compositionality_failures,


# Before the first job: the cores against the numerics' threads, the warm
# jobs' manager started, and the models checked (arch, weights, precision).
# After the last: the warm jobs' servers and Snakemake's idle timers stopped,
# and this experiment's record, which makes its name this config's
# (common.smk). A dry run does none of them.
onstart:
    check_cores_as_the_run_starts()
    start_warm_jobs()
    check_models_as_the_run_starts()


onsuccess:
    end_of_run()
    write_experiment_record()


onerror:
    end_of_run()
    print_failed_jobs(log)


rule all:
    default_target: True
    input:
        rules.summary.output,
        report_files(),
