# knn: top-k predictions in both directions, t2i (texts query images) and i2t.


rule knn:
    input:
        unpack(knn_inputs),
    output:
        predictions=ARTIFACTS["predictions"],
    log:
        "logs/knn/{model_key}/{dataset_key}/top-{top_k}/{direction}.log",
    wildcard_constraints:
        direction="t2i|i2t",
        top_k=r"\d+",
    conda:
        ENV_FILE
    threads: array_job_threads
    resources:
        **speed_knobs("knn"),
    params:
        definition=definition,
        code=code_fingerprint("make-topk-predictions"),
    shell:
        "python -m clipeval make-topk-predictions --image-feats {input.images:q} --text-feats {input.texts:q}"
        " --top-k {wildcards.top_k:q} --direction {wildcards.direction:q} --device {resources.device:q}"
        " --output {output.predictions:q} > {log:q} 2>&1"
