# report: what `snakemake --report` gathers into one HTML file, each
# experiment's own under results/experiments/NAME/report/: the results and
# provenance tables, each dataset's figures over all models, and each
# (model, dataset)'s failure gallery, by the report jobs each task's record
# names (workflow/clipeval/tasks/). A new model or dataset adds its own
# figures; only the per-dataset figures and tables that list it re-run.


rule report_tables:
    input:
        score_files(),
        suite_files(),
    output:
        results=report(
            PLAN.experiment_artifact("results_page"),
            caption="../report/results.rst",
            category="Results",
            subcategory="tables",
            labels={"table": "models × datasets"},
        ),
        provenance=report(
            PLAN.experiment_artifact("provenance_page"),
            caption="../report/provenance.rst",
            category="Results",
            subcategory="provenance",
            labels={"table": "every result's provenance"},
        ),
    log:
        f"logs/report/{PLAN.experiment_name()}/tables.log",
    conda:
        ENV_FILE
    params:
        experiment=PLAN.experiment_name(),
        arguments=report_table_arguments,
        code=code_fingerprint("report-tables"),
    shell:
        "python -m clipeval report-tables --experiment {params.experiment:q} --arguments-file {params.arguments:q}"
        " --results {output.results:q} --provenance {output.provenance:q} > {log:q} 2>&1"


for task in TASKS.values():
    for job in task.report_jobs:
        folder = "{dataset}/{model}" if job.per_model else "{dataset}"

        rule:
            name:
                job.rule
            input:
                unpack(report_inputs(job)),
            output:
                **report_job_outputs(job),
            log:
                f"logs/report/{PLAN.experiment_name()}/{folder}/{job.log}.log",
            wildcard_constraints:
                dataset=names_matching(PLAN.evaluated_datasets(task.name)),
            conda:
                ENV_FILE
            params:
                command=job.command,
                arguments=report_arguments(job),
                options=report_options(job),
                figures=report_figure_options(job),
                code=code_fingerprint(job.command),
            shell:
                (
                    "python -m clipeval {params.command:q} {params.arguments:q} {params.options:q}"
                    " {params.figures:q} > {log:q} 2>&1"
                )


rule plot_comparisons:
    input:
        PLAN.experiment_artifact("comparisons"),
    output:
        forest=report(
            PLAN.experiment_artifact("forest_plot"),
            caption="../report/forest_plot.rst",
            category="{dataset}",
            subcategory="all models",
            labels={"figure": "paired comparisons"},
        ),
        forest_data=PLAN.experiment_artifact("forest_plot_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/comparisons.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.compared_models()),
    conda:
        ENV_FILE
    params:
        code=code_fingerprint("plot-comparisons"),
    shell:
        "python -m clipeval plot-comparisons {input:q} --output {output.forest:q} > {log:q} 2>&1"


rule plot_series:
    input:
        PLAN.experiment_artifact("series_table"),
    output:
        figure=report(
            PLAN.experiment_artifact("series_plot"),
            caption="../report/series.rst",
            category="Checkpoint series",
            subcategory="{series}",
            labels={"figure": "{series}: main metric by step"},
        ),
        data=PLAN.experiment_artifact("series_plot_data"),
        events=PLAN.experiment_artifact("series_events"),
    log:
        f"logs/report/{PLAN.experiment_name()}/series/{{series}}.log",
    wildcard_constraints:
        series=names_matching(list(PLAN.checkpoint_series())),
    conda:
        ENV_FILE
    params:
        code=code_fingerprint("plot-series"),
    shell:
        "python -m clipeval plot-series --series {wildcards.series:q} --table {input:q} --output {output.figure:q}"
        " --events {output.events:q} > {log:q} 2>&1"


rule plot_suite:
    input:
        suite=PLAN.experiment_artifact("suite_scores"),
        scores=suite_score_files,
    output:
        figure=report(
            PLAN.experiment_artifact("suite_plot"),
            caption="../report/suite.rst",
            category="Suites",
            subcategory="{suite}",
            labels={"figure": "{suite}: main metric by dataset"},
        ),
        data=PLAN.experiment_artifact("suite_plot_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/suites/{{suite}}.log",
    wildcard_constraints:
        suite=names_matching(list(PLAN.suites())),
    conda:
        ENV_FILE
    params:
        arguments=suite_plot_arguments,
        code=code_fingerprint("plot-suite"),
    shell:
        "python -m clipeval plot-suite {input.suite:q} --arguments-file {params.arguments:q} --output {output.figure:q}"
        " > {log:q} 2>&1"
