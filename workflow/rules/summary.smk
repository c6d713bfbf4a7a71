# summary: every (model, dataset) score of this experiment in one table,
# per-model averages over datasets and the paired comparisons, as CSV and one
# Markdown report under results/experiments/NAME/.


rule summary:
    input:
        score_files(),
        comparison_files(),
        suite_files(),
        tokenization_files(),
    output:
        csv=PLAN.experiment_artifact("summary_csv"),
        markdown=PLAN.experiment_artifact("summary_markdown"),
        averages=PLAN.experiment_artifact("averages"),
        comparisons=PLAN.experiment_artifact("comparison_table"),
        series=PLAN.experiment_artifact("series_table"),
        groups=PLAN.experiment_artifact("group_table"),
    log:
        f"logs/summary/{PLAN.experiment_name()}.log",
    conda:
        ENV_FILE
    params:
        arguments=summary_arguments,
        code=code_fingerprint("summarize"),
    shell:
        "python -m clipeval summarize --arguments-file {params.arguments:q} --csv {output.csv:q} --markdown {output.markdown:q}"
        " --averages {output.averages:q} --comparisons {output.comparisons:q} --series {output.series:q}"
        " --groups {output.groups:q} > {log:q} 2>&1"
