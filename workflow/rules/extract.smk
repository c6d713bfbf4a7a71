# extract: a model encodes a dataset's images and captions to feature jsonl.
# Batch size, workers and device are resources, not params: they change
# speed, not features, so a change to them re-runs nothing.


rule extract_features:
    input:
        unpack(extract_inputs),
    output:
        images="results/features/{model}/{dataset}/images.jsonl",
        texts="results/features/{model}/{dataset}/texts.jsonl",
        meta="results/features/{model}/{dataset}/meta.json",
    params:
        arch=lambda wildcards: model_config(wildcards.model)["arch"],
        pretrained=pretrained_option,
        precision=config["extract"]["precision"],
        code=stage_fingerprint("extract"),
    threads: min(2, workflow.cores)
    resources:
        batch_size=config["extract"]["batch_size"],
        num_workers=config["extract"]["num_workers"],
        device=config["extract"]["device"],
    log:
        "logs/extract/{model}/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval extract-features --arch {params.arch} {params.pretrained}"
        " --images {input.images} --texts {input.texts} --precision {params.precision}"
        " --batch-size {resources.batch_size} --num-workers {resources.num_workers}"
        " --device {resources.device}"
        " --image-output {output.images} --text-output {output.texts} --meta-output {output.meta}"
        " > {log} 2>&1"
