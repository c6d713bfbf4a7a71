# score: recall from the predictions and the captions' ground truth.


rule score_retrieval:
    input:
        unpack(score_inputs),
    output:
        metrics="results/scores/{model}/{dataset}/retrieval.json",
    params:
        recall_at=" ".join(str(k) for k in config["metrics"]["recall_at"]),
        allow_without_positive=(
            "--allow-queries-without-positive"
            if config["metrics"]["allow_queries_without_positive"]
            else ""
        ),
        result_config=result_config,
        code=stage_fingerprint("score"),
    log:
        "logs/score/{model}/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval score-retrieval --texts {input.texts} --t2i {input.t2i} --i2t {input.i2t}"
        " --recall-at {params.recall_at} {params.allow_without_positive}"
        " --dataset-meta {input.dataset_meta} --model-meta {input.model_meta}"
        " --config {params.result_config:q} --output {output.metrics} > {log} 2>&1"
