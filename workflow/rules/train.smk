# train: a model entry with `train:` settings becomes an open_clip checkpoint.
# Training is seeded and deterministic, so its checkpoint may be shared
# through the between-workflow cache like features.


rule train:
    input:
        unpack(train_inputs),
    output:
        checkpoint="results/models/{model}/checkpoint.pt",
    params:
        arch=lambda wildcards: model_config(wildcards.model)["arch"],
        dataset_dir=lambda wildcards, input: str(Path(input.meta).parent),
        epochs=lambda wildcards: model_config(wildcards.model)["train"]["epochs"],
        batch_size=lambda wildcards: model_config(wildcards.model)["train"]["batch_size"],
        lr=lambda wildcards: model_config(wildcards.model)["train"]["lr"],
        seed=lambda wildcards: model_config(wildcards.model)["train"]["seed"],
        code=stage_fingerprint("train"),
    cache: True
    threads: workflow.cores
    log:
        "logs/train/{model}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval train --arch {params.arch} --dataset {params.dataset_dir}"
        " --epochs {params.epochs} --batch-size {params.batch_size} --lr {params.lr}"
        " --seed {params.seed} --output {output.checkpoint} > {log} 2>&1"
