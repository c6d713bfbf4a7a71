# knn: top-k predictions in both directions, t2i (texts query images) and i2t.


rule knn:
    input:
        unpack(knn_inputs),
    output:
        predictions=ARTIFACTS["predictions"],
    log:
        "logs/knn/{model}/{dataset}/{direction}.log",
    wildcard_constraints:
        direction="t2i|i2t",
    conda:
        ENV_FILE
    threads: COMPUTE_THREADS
    resources:
        **speed_knobs("knn"),
    params:
        top_k=config["knn"]["top_k"],
        definition=definition,
        code=code_fingerprint("make-topk-predictions"),
    shell:
        "python -m clipeval make-topk-predictions --image-feats {input.images:q} --text-feats {input.texts:q}"
        " --top-k {params.top_k:q} --direction {wildcards.direction:q} --device {resources.device:q}"
        " --output {output.predictions:q} > {log:q} 2>&1"
