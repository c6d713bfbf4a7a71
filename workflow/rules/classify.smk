# classify: zero-shot classification. Class prompts (class names × templates)
# are encoded into one embedding per class; images use the features of the
# extract stage; images are classified with logits = 100 · cosine and scored.


rule encode_classes:
    input:
        unpack(class_encode_inputs),
    output:
        classes=ARTIFACTS["class_features"],
    log:
        "logs/classify/{model}/{dataset}/classes.log",
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    resources:
        **speed_knobs("extract"),
    params:
        arch=lambda wildcards: PLAN.model(wildcards.model)["arch"],
        pretrained=pretrained_option,
        precision=lambda wildcards: PLAN.model_precision(wildcards.model),
        preprocess=preprocess_option,
        numerics=config["numerics"],
        definition=definition,
        code=code_fingerprint("encode-classes"),
    shell:
        "python -m clipeval encode-classes --arch {params.arch} {params.pretrained} {params.preprocess}"
        " --precision {params.precision} --classes {input.classes} --output {output.classes}"
        " --batch-size {resources.batch_size} --device {resources.device}"
        " --numerics {params.numerics} --threads {threads} > {log} 2>&1"


rule score_classification:
    input:
        unpack(classification_score_inputs),
    output:
        metrics=ARTIFACTS["classification_scores"],
        ranks=ARTIFACTS["classification_ranks"],
    log:
        "logs/classify/{model}/{dataset}/score.log",
    conda:
        ENV_FILE
    params:
        intervals=PLAN.interval_options(),
        result_config=result_config,
        code=code_fingerprint("score-classification"),
    shell:
        "python -m clipeval score-classification --image-feats {input.images} --class-feats {input.classes}"
        " --labels {input.labels} --classes {input.class_spec} --dataset-meta {input.dataset_meta}"
        " --model-meta {input.model_meta} --config {params.result_config:q} {params.intervals}"
        " --ranks-output {output.ranks} --output {output.metrics} > {log} 2>&1"
