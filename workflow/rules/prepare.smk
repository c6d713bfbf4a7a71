# prepare: a dataset source becomes images.lmdb + meta.json, and texts.jsonl
# and/or labels.jsonl + classes.json, as its format says. One checkpoint per
# source format (workflow/clipeval/data/sources/), all from this definition.
# Checkpoints, so that sharded extraction can count the prepared images.
# Downstream rules depend on meta.json, whose content checksum stands for the
# LMDB directory (Snakemake cannot checksum a directory).

for prepared_format in SOURCE_FORMATS.values():

    checkpoint:
        name:
            f"prepare_{prepared_format.name}"
        input:
            source_files_to_track,
        output:
            **{written: ARTIFACTS[f"dataset_{written}"] for written in prepared_format.writes},
            images=directory(ARTIFACTS["dataset_images"]),
            meta=ARTIFACTS["dataset_meta"],
        log:
            "logs/prepare/{dataset_key}.log",
        wildcard_constraints:
            dataset_key=datasets_of_format(prepared_format.name),
        conda:
            ENV_FILE
        # Images are read and checked in the job's threads; the extraction jobs' threads stay free, so that
        # the model is described beside it.
        threads: lambda wildcards: max(1, (local_cores() or 1) - COMPUTE_THREADS)
        params:
            format=prepared_format.name,
            settings=prepare_settings,
            definition=prepare_definition,
            out_dir=lambda wildcards, output: str(Path(output.meta).parent),
            code=code_fingerprint("prepare", prepared_format.name),
        shell:
            "python -m clipeval prepare {params.format:q} {params.settings:q} --out {params.out_dir:q} > {log:q} 2>&1"
