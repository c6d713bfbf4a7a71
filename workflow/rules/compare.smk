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


# suites: each model's average of the main metrics of a named group of
# datasets, with intervals and paired differences of the averages drawn from
# the same resampled queries of every dataset.


rule score_suite:
    input:
        ranks=suite_ranks,
    output:
        suite=PLAN.experiment_artifact("suite_scores"),
    log:
        f"logs/compare/{PLAN.experiment_name()}/suites/{{suite}}.log",
    wildcard_constraints:
        suite=names_matching(list(PLAN.suites())),
    conda:
        ENV_FILE
    params:
        arguments=suite_arguments,
        intervals=PLAN.interval_options(),
        code=code_fingerprint("score-suite"),
    shell:
        "python -m clipeval score-suite --suite {wildcards.suite:q} --arguments-file {params.arguments:q}"
        " {params.intervals:q} --output {output.suite:q} > {log:q} 2>&1"
