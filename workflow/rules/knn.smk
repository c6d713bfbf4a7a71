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
        "python -m clipeval make-topk-predictions --image-feats {input.images} --text-feats {input.texts}"
        " --top-k {params.top_k} --direction {wildcards.direction} --device {resources.device}"
        " --output {output.predictions} > {log} 2>&1"
