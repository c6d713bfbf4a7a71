# compare: the models evaluated on one dataset, metric by metric, with paired
# bootstrap intervals drawn from the same resampled queries. One job per
# dataset (every two models, or each against compare.baseline), so a sweep
# of many models adds one job per dataset, not one per pair.


rule compare_models:
    input:
        ranks=compared_ranks,
    output:
        comparisons=PLAN.experiment_artifact("comparisons"),
    log:
        f"logs/compare/{PLAN.experiment_name()}/{{dataset}}.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.compared_models()),
    conda:
        ENV_FILE
    params:
        arguments=comparison_arguments,
        intervals=PLAN.interval_options(),
        definition=comparison_definition,
        code=code_fingerprint("compare-models"),
    shell:
        "python -m clipeval compare-models --arguments-file {params.arguments:q} --dataset {wildcards.dataset:q}"
        " {params.intervals:q} --output {output.comparisons:q} > {log:q} 2>&1"
