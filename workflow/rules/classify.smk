# classify: zero-shot classification's class features. Class prompts (class
# names × templates) are encoded into one embedding per class, beside the
# extract stage's image features; score.smk classifies the images with
# logits = 100 · cosine and scores them.


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
