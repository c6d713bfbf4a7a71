# train: a model entry with `train:` settings becomes an open_clip checkpoint.
# Training is seeded and deterministic, so its checkpoint may be shared
# through the between-workflow cache like features.


rule train:
    input:
        unpack(train_inputs),
    output:
        checkpoint=ARTIFACTS["checkpoint"],
    log:
        "logs/train/{model}.log",
    # Only models this config trains: a `pretrained:` path of the same shape
    # (another experiment's checkpoint) is a plain input.
    wildcard_constraints:
        model=names_matching(name for name, entry in config["models"].items() if "train" in entry),
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    params:
        arch=lambda wildcards: PLAN.model(wildcards.model)["arch"],
        dataset_dir=lambda wildcards, input: str(Path(input.meta).parent),
        epochs=lambda wildcards: PLAN.model(wildcards.model)["train"]["epochs"],
        batch_size=lambda wildcards: PLAN.model(wildcards.model)["train"]["batch_size"],
        lr=lambda wildcards: PLAN.model(wildcards.model)["train"]["lr"],
        seed=lambda wildcards: PLAN.model(wildcards.model)["train"]["seed"],
        dataset_definition=lambda wildcards: json.dumps(
            PLAN.dataset(PLAN.model(wildcards.model)["train"]["dataset"]), sort_keys=True
        ),
        numerics=config["numerics"],
        code=code_fingerprint("train"),
    shell:
        "python -m clipeval train --arch {params.arch:q} --dataset {params.dataset_dir:q}"
        " --epochs {params.epochs:q} --batch-size {params.batch_size:q} --lr {params.lr:q}"
        " --seed {params.seed:q} --numerics {params.numerics:q} --threads {threads:q} --output {output.checkpoint:q} > {log:q} 2>&1"
