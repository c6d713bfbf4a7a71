# summary: every (model, dataset) score in one table, CSV and Markdown.


rule summary:
    input:
        score_files(),
    output:
        csv="results/summary.csv",
        markdown="results/summary.md",
    params:
        entries=summary_entries(),
        code=stage_fingerprint("summary"),
    log:
        "logs/summary.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval summarize {params.entries} --csv {output.csv} --markdown {output.markdown} > {log} 2>&1"
