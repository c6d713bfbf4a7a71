# classify: zero-shot classification. Class prompts (class names × templates)
# are encoded into one embedding per class; images use the features of the
# extract stage; images are classified with logits = 100 · cosine and scored.


rule encode_classes:
    input:
        unpack(class_encode_inputs),
    output:
        classes=ARTIFACTS["class_features"],
    log:
        "logs/classify/{model_key}/{dataset_key}/classes.log",
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    resources:
        **speed_knobs("extract"),
    params:
        arch=model_setting("arch"),
        pretrained=pretrained_option,
        precision=model_precision,
        preprocess=preprocess_option,
        numerics=config["numerics"],
        definition=definition,
        code=model_code_fingerprint("encode-classes"),
    shell:
        "python -m clipeval encode-classes --arch {params.arch:q} {params.pretrained:q} {params.preprocess:q}"
        " --precision {params.precision:q} --classes {input.classes:q} --output {output.classes:q}"
        " --batch-size {resources.batch_size:q} --device {resources.device:q}"
        " --numerics {params.numerics:q} --threads {threads:q} > {log:q} 2>&1"


rule score_classification:
    input:
        unpack(classification_score_inputs),
    output:
        metrics=PLAN.experiment_artifact("classification_scores"),
        ranks=PLAN.experiment_artifact("classification_ranks"),
    log:
        f"logs/classify/{PLAN.experiment_name()}/{{model}}/{{dataset}}/score.log",
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
        f"logs/classify/{PLAN.experiment_name()}/{{model}}/{{dataset}}/probe.log",
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
