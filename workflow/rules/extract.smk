# extract: a model encodes a dataset's captions and images to feature jsonl.
# Images are encoded in shards (one by default, `extract.shard_size` images
# each otherwise), each its own job, then gathered in id order. Extraction
# jobs are marked for Snakemake's between-workflow cache (--cache).
# Batch size, workers and device are speed knobs (see common.smk).
# Each image is decoded, resized and cropped once per preprocessing recipe
# (decode_pixels), for every model whose preprocessing makes the same pixels;
# describe_model finds a model's recipe, so it is a checkpoint.


checkpoint describe_model:
    input:
        unpack(weights_input),
    output:
        meta=ARTIFACTS["model_meta"],
    log:
        "logs/extract/{model_key}/meta.log",
    wildcard_constraints:
        model_key=model_keys_where(lambda entry: "features" not in entry),
    conda:
        ENV_FILE
    # It computes nothing; with the threads of the jobs that extract, it forks from their warm server.
    threads: COMPUTE_THREADS
    params:
        arch=model_setting("arch"),
        pretrained=pretrained_option,
        precision=model_precision,
        preprocess=preprocess_option,
        numerics=config["numerics"],
        definition=definition,
        code=model_code_fingerprint("describe-model"),
    shell:
        "python -m clipeval describe-model --arch {params.arch:q} {params.pretrained:q}"
        " --precision {params.precision:q} {params.preprocess:q} --numerics {params.numerics:q} --output {output.meta:q} > {log:q} 2>&1"


rule describe_features_model:
    input:
        precomputed_feature_files,
    output:
        meta=ARTIFACTS["model_meta"],
    log:
        "logs/extract/{model_key}/meta.log",
    wildcard_constraints:
        model_key=model_keys_where(lambda entry: "features" in entry),
    conda:
        ENV_FILE
    params:
        definition=definition,
        code=code_fingerprint("describe-features"),
    shell:
        "python -m clipeval describe-features {input:q} --output {output.meta:q} > {log:q} 2>&1"


rule extract_text_features:
    input:
        unpack(text_extract_inputs),
    output:
        # One prefix, so that Snakemake's between-workflow cache keeps both files.
        multiext(
            ARTIFACTS["text_features"].removesuffix(".jsonl"),
            texts=".jsonl",
            tokenization=".tokenization.json",
        ),
    log:
        "logs/extract/{model_key}/{dataset_key}/texts.log",
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
        code=model_code_fingerprint("extract-features"),
    shell:
        "python -m clipeval extract-features --arch {params.arch:q} {params.pretrained:q} {params.preprocess:q}"
        " --precision {params.precision:q} --texts {input.texts:q} --text-output {output.texts:q}"
        " --tokenization-output {output.tokenization:q}"
        " --batch-size {resources.batch_size:q} --device {resources.device:q}"
        " --numerics {params.numerics:q} --threads {threads:q} > {log:q} 2>&1"


rule decode_pixels:
    input:
        meta=ARTIFACTS["dataset_meta"],
    output:
        shard=directory(ARTIFACTS["pixel_shard"]),
    log:
        "logs/extract/{dataset_key}/pixels/{recipe}/by-{shard_size}/{shard}.log",
    wildcard_constraints:
        recipe=PIXEL_RECIPE_PATTERN,
        shard_size=r"\d+",
        shard=r"\d+",
    conda:
        ENV_FILE
    # A decoding process for each thread; the pixels are the same bits for any number of them.
    threads: decode_threads
    resources:
        **decode_knobs(),
    params:
        images=dataset_artifact("dataset_images"),
        shard_size=config["extract"]["shard_size"],
        definition=definition,
        code=code_fingerprint("decode-pixels"),
    shell:
        "python -m clipeval decode-pixels --images {params.images:q} --recipe {wildcards.recipe:q}"
        " --shard-index {wildcards.shard:q} --shard-size {params.shard_size:q} --store {resources.pixels:q}"
        " --num-workers {resources.num_workers:q} --output {output.shard:q} > {log:q} 2>&1"


rule extract_image_shard:
    input:
        unpack(image_extract_inputs),
    output:
        shard=ARTIFACTS["image_shard"],
    log:
        "logs/extract/{model_key}/{dataset_key}/images-by-{shard_size}-{shard}.log",
    wildcard_constraints:
        shard_size=r"\d+",
        shard=r"\d+",
    cache: True
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    resources:
        **speed_knobs("extract"),
    params:
        images=dataset_artifact("dataset_images"),
        shard_size=config["extract"]["shard_size"],
        arch=model_setting("arch"),
        pretrained=pretrained_option,
        precision=model_precision,
        preprocess=preprocess_option,
        numerics=config["numerics"],
        pixels=pixels_option,
        definition=definition,
        code=model_code_fingerprint("extract-features"),
    shell:
        "python -m clipeval extract-features --arch {params.arch:q} {params.pretrained:q} {params.preprocess:q}"
        " --precision {params.precision:q} --images {params.images:q} {params.pixels:q}"
        " --shard-index {wildcards.shard:q} --shard-size {params.shard_size:q} --image-output {output.shard:q}"
        " --batch-size {resources.batch_size:q} --num-workers {resources.num_workers:q}"
        " --device {resources.device:q} --numerics {params.numerics:q} --threads {threads:q} > {log:q} 2>&1"


rule gather_image_features:
    input:
        image_shards,
    output:
        images=ARTIFACTS["image_features"],
    log:
        "logs/extract/{model_key}/{dataset_key}/gather.log",
    cache: True
    conda:
        ENV_FILE
    params:
        definition=definition,
        code=code_fingerprint("gather-features"),
    shell:
        "python -m clipeval gather-features {input:q} --id-key image_id --output {output.images:q} > {log:q} 2>&1"
