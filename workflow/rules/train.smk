# train: a model entry with `train:` settings becomes an open_clip checkpoint.
# Training is seeded and deterministic, so its checkpoint may be shared
# through the between-workflow cache like features.


rule train:
    input:
        unpack(train_inputs),
    output:
        checkpoint=ARTIFACTS["checkpoint"],
    log:
        "logs/train/{training_key}.log",
    # Only models this config trains: a `pretrained:` path of the same shape
    # (another experiment's checkpoint) is a plain input.
    wildcard_constraints:
        training_key=names_matching(PLAN.training_keys.values()),
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    params:
        arch=trained_arch,
        dataset_dir=lambda wildcards, input: str(Path(input.meta).parent),
        epochs=train_setting("epochs"),
        batch_size=train_setting("batch_size"),
        lr=train_setting("lr"),
        seed=train_setting("seed"),
        dataset_definition=training_dataset_definition,
        numerics=config["numerics"],
        code=code_fingerprint("train"),
    shell:
        "python -m clipeval train --arch {params.arch:q} --dataset {params.dataset_dir:q}"
        " --epochs {params.epochs:q} --batch-size {params.batch_size:q} --lr {params.lr:q}"
        " --seed {params.seed:q} --numerics {params.numerics:q} --threads {threads:q} --output {output.checkpoint:q} > {log:q} 2>&1"
