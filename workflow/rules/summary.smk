# summary: every (model, dataset) score in one table, per-model averages over
# datasets and the paired comparisons, as CSV and one Markdown report.


rule summary:
    input:
        score_files(),
        comparison_files(),
    output:
        csv="results/summary.csv",
        markdown="results/summary.md",
        averages="results/averages.csv",
        comparisons="results/comparisons.csv",
    params:
        entries=summary_entries(),
        code=code_fingerprint("summarize"),
    log:
        "logs/summary/summary.log",
    conda:
        ENV_FILE
    shell:
        "python -m clipeval summarize {params.entries} --csv {output.csv} --markdown {output.markdown}"
        " --averages {output.averages} --comparisons {output.comparisons} > {log} 2>&1"
