# train: a model entry with `train:` settings becomes an open_clip checkpoint,
# trained from random weights or fine-tuned from `from:` weights. Training is
# seeded and deterministic, so its checkpoint may be shared through the
# between-workflow cache like features. A series that evaluates every epoch
# (`every_epoch: true`) trains one epoch a job, each resuming from the state
# the one before left, so each epoch is evaluated as the next trains.


rule train:
    input:
        unpack(train_inputs),
    output:
        checkpoint=ARTIFACTS["checkpoint"],
    log:
        "logs/train/{training_key}.log",
    # Only models this config trains at once: a `pretrained:` path of the
    # same shape (another experiment's checkpoint) is a plain input.
    wildcard_constraints:
        training_key=names_matching(PLAN.training_keys_at_once()),
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    params:
        **training_params(),
    shell:
        "python -m clipeval train --arch {params.arch:q} --dataset {params.dataset_dir:q}"
        " --epochs {params.epochs:q} --batch-size {params.batch_size:q} --lr {params.lr:q}"
        " --seed {params.seed:q} {params.options:q} --numerics {params.numerics:q} --threads {threads:q}"
        " --output {output.checkpoint:q} > {log:q} 2>&1"


rule train_epoch:
    input:
        unpack(epoch_train_inputs),
    output:
        checkpoint=ARTIFACTS["checkpoint"],
        # Removed once the next epoch has resumed from it (the last epoch's at once): it is some three times
        # the checkpoint's size, and no evaluation reads it.
        state=temp(ARTIFACTS["training_state"]),
    log:
        "logs/train/{training_key}.log",
    wildcard_constraints:
        training_key=names_matching(PLAN.training_keys_by_epoch()),
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    params:
        **training_params(),
        resume=lambda wildcards, input: ["--resume", input.resume] if "resume" in input.keys() else [],
    shell:
        "python -m clipeval train --arch {params.arch:q} --dataset {params.dataset_dir:q}"
        " --epochs {params.epochs:q} --batch-size {params.batch_size:q} --lr {params.lr:q}"
        " --seed {params.seed:q} {params.options:q} {params.resume:q} --numerics {params.numerics:q}"
        " --threads {threads:q} --output {output.checkpoint:q} --state-output {output.state:q} > {log:q} 2>&1"
