# score: each task's metrics from the files its record names
# (workflow/clipeval/tasks/), with bootstrap intervals, by the command the
# record names; the ranks records (each query's, image's or example's outcome)
# feed paired comparisons. Retrieval's scores are checked against knn's top-k
# predictions under the full protocol; classification's class features come
# from classify.smk; the probe is fitted on its train split's features.


for task in TASKS.values():

    rule:
        name:
            f"score_{task.name}"
        input:
            unpack(score_inputs),
        output:
            metrics=PLAN.experiment_artifact(f"{task.name}_scores"),
            ranks=PLAN.experiment_artifact(f"{task.name}_ranks"),
        log:
            f"logs/score/{PLAN.experiment_name()}/{{model}}/{{dataset}}/{task.name}.log",
        conda:
            ENV_FILE
        threads: array_job_threads if task.array_threads else 1
        params:
            command=task.score_command,
            arguments=score_arguments,
            result_config=result_config,
            code=code_fingerprint(task.score_command),
        shell:
            "python -m clipeval {params.command:q} {params.arguments:q} --config {params.result_config:q}"
            " --ranks-output {output.ranks:q} --output {output.metrics:q} > {log:q} 2>&1"
