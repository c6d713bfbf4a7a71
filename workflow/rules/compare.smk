# compare: every two models evaluated on one dataset, metric by metric, with
# paired bootstrap intervals drawn from the same resampled queries.


rule compare_models:
    input:
        unpack(ranks_inputs),
    output:
        comparison=ARTIFACTS["comparison"],
    params:
        intervals=interval_options(),
        definition=definition,
        code=code_fingerprint("compare-models"),
    log:
        "logs/compare/{dataset}/{first}/{second}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval compare-models {input.first} {input.second}"
        " --names {wildcards.first} {wildcards.second} --dataset {wildcards.dataset}"
        " {params.intervals} --output {output.comparison} > {log} 2>&1"
