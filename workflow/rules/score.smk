# score: retrieval metrics from the full ranking of the features, checked
# against the top-k predictions under the full protocol, with bootstrap
# intervals; the per-query ranks feed paired comparisons.


rule score_retrieval:
    input:
        unpack(score_inputs),
    output:
        metrics=PLAN.experiment_artifact("retrieval_scores"),
        ranks=PLAN.experiment_artifact("retrieval_ranks"),
    log:
        f"logs/score/{PLAN.experiment_name()}/{{model}}/{{dataset}}.log",
    conda:
        ENV_FILE
    threads: array_job_threads
    params:
        predictions=predictions_option,
        protocol=lambda wildcards: PLAN.retrieval_protocol(wildcards.dataset),
        recall_at=[str(k) for k in config["metrics"]["recall_at"]],
        ranking_at=[str(k) for k in config["metrics"]["ranking_at"]],
        allow_without_positive=(
            "--allow-queries-without-positive" if config["metrics"]["allow_queries_without_positive"] else ""
        ),
        intervals=PLAN.interval_options(),
        result_config=result_config,
        code=code_fingerprint("score-retrieval"),
    shell:
        "python -m clipeval score-retrieval --texts {input.texts:q}"
        " --image-feats {input.image_feats:q} --text-feats {input.text_feats:q} {params.predictions:q}"
        " --protocol {params.protocol:q} --recall-at {params.recall_at:q} --ranking-at {params.ranking_at:q}"
        " {params.allow_without_positive:q}"
        " {params.intervals:q} --dataset-meta {input.dataset_meta:q} --model-meta {input.model_meta:q}"
        " --config {params.result_config:q} --ranks-output {output.ranks:q} --output {output.metrics:q} > {log:q} 2>&1"


# compositionality: each example's images choose among its captions and its
# captions among its images, from the extract stage's features (no knn).


rule score_compositionality:
    input:
        unpack(compositionality_score_inputs),
    output:
        metrics=PLAN.experiment_artifact("compositionality_scores"),
        ranks=PLAN.experiment_artifact("compositionality_ranks"),
    log:
        f"logs/score/{PLAN.experiment_name()}/{{model}}/{{dataset}}/compositionality.log",
    conda:
        ENV_FILE
    params:
        intervals=PLAN.interval_options(),
        result_config=result_config,
        code=code_fingerprint("score-compositionality"),
    shell:
        "python -m clipeval score-compositionality --examples {input.examples:q}"
        " --image-feats {input.image_feats:q} --text-feats {input.text_feats:q} {params.intervals:q}"
        " --dataset-meta {input.dataset_meta:q} --model-meta {input.model_meta:q} --config {params.result_config:q}"
        " --ranks-output {output.ranks:q} --output {output.metrics:q} > {log:q} 2>&1"
