# prepare: a dataset source becomes images.lmdb + texts.jsonl + meta.json,
# one rule per `format:`.
# Checkpoints, so that sharded extraction can count the prepared images.
# Downstream rules depend on meta.json, whose content checksum stands for the
# LMDB directory (Snakemake cannot checksum a directory).


checkpoint prepare_shapes:
    output:
        images=directory("results/datasets/{dataset}/images.lmdb"),
        texts="results/datasets/{dataset}/texts.jsonl",
        labels="results/datasets/{dataset}/labels.jsonl",
        classes="results/datasets/{dataset}/classes.json",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=datasets_of_format("shapes"),
    params:
        out_dir=lambda wildcards, output: str(Path(output.meta).parent),
        num_images=lambda wildcards: dataset_config(wildcards.dataset)["num_images"],
        seed=lambda wildcards: dataset_config(wildcards.dataset)["seed"],
        first_image_id=lambda wildcards: dataset_config(wildcards.dataset).get("first_image_id", 0),
        code=code_fingerprint("make-shapes"),
    log:
        "logs/prepare/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval make-shapes --num-images {params.num_images} --seed {params.seed}"
        " --first-image-id {params.first_image_id} --out {params.out_dir} > {log} 2>&1"


checkpoint prepare_cnclip:
    input:
        unpack(cnclip_sources),
    output:
        images=directory("results/datasets/{dataset}/images.lmdb"),
        texts="results/datasets/{dataset}/texts.jsonl",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=datasets_of_format("cnclip"),
    params:
        images=lambda wildcards: dataset_config(wildcards.dataset)["images"],
        out_dir=lambda wildcards, output: str(Path(output.meta).parent),
        code=code_fingerprint("import-cnclip"),
    log:
        "logs/prepare/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval import-cnclip --images {params.images:q} --texts {input.texts:q}"
        " --out {params.out_dir} > {log} 2>&1"


# Image folders are passed as params and tracked by the content of their
# files (image_folder_digest in inputs.smk); annotation files are inputs.


checkpoint prepare_karpathy:
    input:
        annotations=lambda wildcards: dataset_config(wildcards.dataset)["annotations"],
    output:
        images=directory("results/datasets/{dataset}/images.lmdb"),
        texts="results/datasets/{dataset}/texts.jsonl",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=datasets_of_format("karpathy"),
    params:
        images=lambda wildcards: dataset_config(wildcards.dataset)["images"],
        image_files=image_folder_digest,
        split=lambda wildcards: " ".join(dataset_config(wildcards.dataset).get("split", ["test"])),
        image_id=lambda wildcards: (
            f"--image-id {dataset_config(wildcards.dataset)['image_id']}"
            if "image_id" in dataset_config(wildcards.dataset)
            else ""
        ),
        out_dir=lambda wildcards, output: str(Path(output.meta).parent),
        code=code_fingerprint("import-karpathy"),
    log:
        "logs/prepare/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval import-karpathy --annotations {input.annotations:q} --images {params.images:q}"
        " --split {params.split} {params.image_id} --out {params.out_dir} > {log} 2>&1"


checkpoint prepare_coco:
    input:
        unpack(coco_sources),
    output:
        images=directory("results/datasets/{dataset}/images.lmdb"),
        texts="results/datasets/{dataset}/texts.jsonl",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=datasets_of_format("coco"),
    params:
        images=lambda wildcards: dataset_config(wildcards.dataset)["images"],
        image_files=image_folder_digest,
        image_ids=lambda wildcards, input: f"--image-ids {shlex.quote(input.image_ids)}" if "image_ids" in input.keys() else "",
        out_dir=lambda wildcards, output: str(Path(output.meta).parent),
        code=code_fingerprint("import-coco"),
    log:
        "logs/prepare/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval import-coco --annotations {input.annotations:q} --images {params.images:q}"
        " {params.image_ids} --out {params.out_dir} > {log} 2>&1"


checkpoint prepare_imagefolder:
    input:
        classnames=lambda wildcards: dataset_config(wildcards.dataset)["classnames"],
        templates=lambda wildcards: dataset_config(wildcards.dataset)["templates"],
    output:
        images=directory("results/datasets/{dataset}/images.lmdb"),
        labels="results/datasets/{dataset}/labels.jsonl",
        classes="results/datasets/{dataset}/classes.json",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=datasets_of_format("imagefolder"),
    params:
        images=lambda wildcards: dataset_config(wildcards.dataset)["images"],
        image_files=image_folder_digest,
        first_image_id=lambda wildcards: dataset_config(wildcards.dataset).get("first_image_id", 0),
        out_dir=lambda wildcards, output: str(Path(output.meta).parent),
        code=code_fingerprint("import-imagefolder"),
    log:
        "logs/prepare/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval import-imagefolder --images {params.images:q} --classnames {input.classnames:q}"
        " --templates {input.templates:q} --first-image-id {params.first_image_id} --out {params.out_dir} > {log} 2>&1"


checkpoint prepare_cifar:
    input:
        unpack(cifar_sources),
    output:
        images=directory("results/datasets/{dataset}/images.lmdb"),
        labels="results/datasets/{dataset}/labels.jsonl",
        classes="results/datasets/{dataset}/classes.json",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=datasets_of_format("cifar"),
    params:
        first_image_id=lambda wildcards: dataset_config(wildcards.dataset).get("first_image_id", 0),
        out_dir=lambda wildcards, output: str(Path(output.meta).parent),
        code=code_fingerprint("import-cifar"),
    log:
        "logs/prepare/{dataset}.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval import-cifar --batch {input.batch:q} --templates {input.templates:q}"
        " --first-image-id {params.first_image_id} --out {params.out_dir} > {log} 2>&1"
