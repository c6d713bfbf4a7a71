# score: each task's metrics from the features, with bootstrap intervals; the
# ranks records (each query's or image's rank) feed paired comparisons.
# Retrieval: from the full ranking of the features, checked against the top-k
# predictions under the full protocol.


rule score_retrieval:
    input:
        unpack(score_inputs),
    output:
        metrics=PLAN.experiment_artifact("retrieval_scores"),
        ranks=PLAN.experiment_artifact("retrieval_ranks"),
    log:
        f"logs/score/{PLAN.experiment_name()}/{{model}}/{{dataset}}/retrieval.log",
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


# classification: each image ranks the class features (classify.smk).


rule score_classification:
    input:
        unpack(classification_score_inputs),
    output:
        metrics=PLAN.experiment_artifact("classification_scores"),
        ranks=PLAN.experiment_artifact("classification_ranks"),
    log:
        f"logs/score/{PLAN.experiment_name()}/{{model}}/{{dataset}}/classification.log",
    conda:
        ENV_FILE
    params:
        intervals=PLAN.interval_options(),
        result_config=result_config,
        code=code_fingerprint("score-classification"),
    shell:
        "python -m clipeval score-classification --image-feats {input.images:q} --class-feats {input.classes:q}"
        " --labels {input.labels:q} --classes {input.class_spec:q} --dataset-meta {input.dataset_meta:q}"
        " --model-meta {input.model_meta:q} --config {params.result_config:q} {params.intervals:q}"
        " --ranks-output {output.ranks:q} --output {output.metrics:q} > {log:q} 2>&1"


# probe: logistic regression on the frozen image features of a train split,
# few-shot and full, scored on the test split's (no class prompts).


rule score_probe:
    input:
        unpack(probe_score_inputs),
    output:
        metrics=PLAN.experiment_artifact("probe_scores"),
        ranks=PLAN.experiment_artifact("probe_ranks"),
    log:
        f"logs/score/{PLAN.experiment_name()}/{{model}}/{{dataset}}/probe.log",
    conda:
        ENV_FILE
    params:
        probe=PLAN.probe_options(),
        intervals=PLAN.interval_options(),
        result_config=result_config,
        code=code_fingerprint("score-probe"),
    shell:
        "python -m clipeval score-probe --train-feats {input.train_feats:q} --train-labels {input.train_labels:q}"
        " --train-classes {input.train_classes:q} --image-feats {input.image_feats:q} --labels {input.labels:q}"
        " --classes {input.classes:q} {params.probe:q} {params.intervals:q} --dataset-meta {input.dataset_meta:q}"
        " --model-meta {input.model_meta:q} --config {params.result_config:q}"
        " --ranks-output {output.ranks:q} --output {output.metrics:q} > {log:q} 2>&1"
