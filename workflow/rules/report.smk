# report: what `snakemake --report` gathers into one HTML file, each
# experiment's own under results/experiments/NAME/report/: the results and
# provenance tables, each dataset's figures over all models, and each
# (model, dataset)'s failure gallery. A new model or dataset adds its own
# figures; only the per-dataset figures and tables that list it re-run.


rule report_tables:
    input:
        score_files(),
        suite_files(),
    output:
        results=report(
            PLAN.experiment_artifact("results_page"),
            caption="../report/results.rst",
            category="Results",
            subcategory="tables",
            labels={"table": "models × datasets"},
        ),
        provenance=report(
            PLAN.experiment_artifact("provenance_page"),
            caption="../report/provenance.rst",
            category="Results",
            subcategory="provenance",
            labels={"table": "every result's provenance"},
        ),
    log:
        f"logs/report/{PLAN.experiment_name()}/tables.log",
    conda:
        ENV_FILE
    params:
        experiment=PLAN.experiment_name(),
        arguments=report_table_arguments,
        code=code_fingerprint("report-tables"),
    shell:
        "python -m clipeval report-tables --experiment {params.experiment:q} --arguments-file {params.arguments:q}"
        " --results {output.results:q} --provenance {output.provenance:q} > {log:q} 2>&1"


rule plot_retrieval:
    input:
        dataset_ranks,
    output:
        curves=report(
            PLAN.experiment_artifact("recall_curves"),
            caption="../report/recall_curves.rst",
            category="{dataset}",
            subcategory="all models",
            labels={"figure": "recall@K curves"},
        ),
        curve_data=PLAN.experiment_artifact("recall_curves_data"),
        ranks=report(
            PLAN.experiment_artifact("rank_distribution"),
            caption="../report/rank_distribution.rst",
            category="{dataset}",
            subcategory="all models",
            labels={"figure": "rank of the first correct item"},
        ),
        rank_data=PLAN.experiment_artifact("rank_distribution_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/plots.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.evaluated_datasets("retrieval")),
    conda:
        ENV_FILE
    params:
        arguments=dataset_plot_arguments,
        code=code_fingerprint("plot-dataset"),
    shell:
        "python -m clipeval plot-dataset --dataset {wildcards.dataset:q} --arguments-file {params.arguments:q}"
        " --recall-curves {output.curves:q} --rank-distribution {output.ranks:q} > {log:q} 2>&1"


rule plot_classification:
    input:
        dataset_scores,
    output:
        recall=report(
            PLAN.experiment_artifact("class_recall"),
            caption="../report/class_recall.rst",
            category="{dataset}",
            subcategory="all models",
            labels={"figure": "recall per class"},
        ),
        recall_data=PLAN.experiment_artifact("class_recall_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/plots.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.evaluated_datasets("classification")),
    conda:
        ENV_FILE
    params:
        arguments=dataset_plot_arguments,
        code=code_fingerprint("plot-dataset"),
    shell:
        "python -m clipeval plot-dataset --dataset {wildcards.dataset:q} --arguments-file {params.arguments:q}"
        " --class-recall {output.recall:q} > {log:q} 2>&1"


rule plot_probe:
    input:
        dataset_scores,
    output:
        figure=report(
            PLAN.experiment_artifact("probe_plot"),
            caption="../report/probe.rst",
            category="{dataset}",
            subcategory="all models",
            labels={"figure": "linear probe by shots"},
        ),
        data=PLAN.experiment_artifact("probe_plot_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/probe.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.evaluated_datasets("probe")),
    conda:
        ENV_FILE
    params:
        arguments=dataset_plot_arguments,
        code=code_fingerprint("plot-probe"),
    shell:
        "python -m clipeval plot-probe --dataset {wildcards.dataset:q} --arguments-file {params.arguments:q}"
        " --output {output.figure:q} > {log:q} 2>&1"


rule plot_comparisons:
    input:
        PLAN.experiment_artifact("comparisons"),
    output:
        forest=report(
            PLAN.experiment_artifact("forest_plot"),
            caption="../report/forest_plot.rst",
            category="{dataset}",
            subcategory="all models",
            labels={"figure": "paired comparisons"},
        ),
        forest_data=PLAN.experiment_artifact("forest_plot_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/comparisons.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.compared_models()),
    conda:
        ENV_FILE
    params:
        code=code_fingerprint("plot-comparisons"),
    shell:
        "python -m clipeval plot-comparisons {input:q} --output {output.forest:q} > {log:q} 2>&1"


rule plot_series:
    input:
        PLAN.experiment_artifact("series_table"),
    output:
        figure=report(
            PLAN.experiment_artifact("series_plot"),
            caption="../report/series.rst",
            category="Checkpoint series",
            subcategory="{series}",
            labels={"figure": "{series}: main metric by step"},
        ),
        data=PLAN.experiment_artifact("series_plot_data"),
        events=PLAN.experiment_artifact("series_events"),
    log:
        f"logs/report/{PLAN.experiment_name()}/series/{{series}}.log",
    wildcard_constraints:
        series=names_matching(list(PLAN.checkpoint_series())),
    conda:
        ENV_FILE
    params:
        code=code_fingerprint("plot-series"),
    shell:
        "python -m clipeval plot-series --series {wildcards.series:q} --table {input:q} --output {output.figure:q}"
        " --events {output.events:q} > {log:q} 2>&1"


rule retrieval_failures:
    input:
        unpack(retrieval_gallery_inputs),
    output:
        t2i=report(
            PLAN.experiment_artifact("t2i_failures"),
            caption="../report/t2i_failures.rst",
            category="{dataset}",
            subcategory="{model}",
            labels={"figure": "worst text → image queries"},
        ),
        t2i_shown=PLAN.experiment_artifact("t2i_failures_data"),
        i2t=report(
            PLAN.experiment_artifact("i2t_failures"),
            caption="../report/i2t_failures.rst",
            category="{dataset}",
            subcategory="{model}",
            labels={"figure": "worst image → text queries"},
        ),
        i2t_shown=PLAN.experiment_artifact("i2t_failures_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/{{model}}/failures.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.evaluated_datasets("retrieval")),
    conda:
        ENV_FILE
    params:
        title=gallery_title,
        gallery=gallery_options,
        code=code_fingerprint("retrieval-failures"),
    shell:
        "python -m clipeval retrieval-failures --title {params.title:q} {params.gallery:q}"
        " --images {input.images:q} --image-feats {input.image_feats:q} --texts {input.texts:q}"
        " --text-feats {input.text_feats:q} --ranks {input.ranks:q}"
        " --t2i-output {output.t2i} --i2t-output {output.i2t} > {log:q} 2>&1"


rule classification_failures:
    input:
        unpack(classification_gallery_inputs),
    output:
        confusion=report(
            PLAN.experiment_artifact("confusion"),
            caption="../report/confusion.rst",
            category="{dataset}",
            subcategory="{model}",
            labels={"figure": "confusion matrix"},
        ),
        confusion_data=PLAN.experiment_artifact("confusion_data"),
        pairs=report(
            PLAN.experiment_artifact("confused_pairs"),
            caption="../report/confused_pairs.rst",
            category="{dataset}",
            subcategory="{model}",
            labels={"figure": "most confused classes"},
        ),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/{{model}}/failures.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.evaluated_datasets("classification")),
    conda:
        ENV_FILE
    params:
        title=gallery_title,
        gallery=gallery_options,
        code=code_fingerprint("classification-failures"),
    shell:
        "python -m clipeval classification-failures --title {params.title:q} {params.gallery:q}"
        " --images {input.images:q} --image-feats {input.image_feats:q} --class-feats {input.class_feats:q}"
        " --labels {input.labels:q} --classes {input.classes:q}"
        " --confusion-output {output.confusion:q} --pairs-output {output.pairs:q} > {log:q} 2>&1"


rule compositionality_failures:
    input:
        unpack(compositionality_gallery_inputs),
    output:
        gallery=report(
            PLAN.experiment_artifact("choice_failures"),
            caption="../report/choice_failures.rst",
            category="{dataset}",
            subcategory="{model}",
            labels={"figure": "wrong choices"},
        ),
        data=PLAN.experiment_artifact("choice_failures_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/{{dataset}}/{{model}}/choice-failures.log",
    wildcard_constraints:
        dataset=names_matching(PLAN.evaluated_datasets("compositionality")),
    conda:
        ENV_FILE
    params:
        title=gallery_title,
        failures=config["report"]["failures"],
        thumbnail=config["report"]["thumbnail_size"],
        code=code_fingerprint("compositionality-failures"),
    shell:
        "python -m clipeval compositionality-failures --title {params.title:q} --images {input.images:q}"
        " --texts {input.texts:q} --examples {input.examples:q} --ranks {input.ranks:q}"
        " --failures {params.failures:q} --thumbnail {params.thumbnail:q} --output {output.gallery:q} > {log:q} 2>&1"


rule plot_suite:
    input:
        suite=PLAN.experiment_artifact("suite_scores"),
        scores=suite_score_files,
    output:
        figure=report(
            PLAN.experiment_artifact("suite_plot"),
            caption="../report/suite.rst",
            category="Suites",
            subcategory="{suite}",
            labels={"figure": "{suite}: main metric by dataset"},
        ),
        data=PLAN.experiment_artifact("suite_plot_data"),
    log:
        f"logs/report/{PLAN.experiment_name()}/suites/{{suite}}.log",
    wildcard_constraints:
        suite=names_matching(list(PLAN.suites())),
    conda:
        ENV_FILE
    params:
        arguments=suite_plot_arguments,
        code=code_fingerprint("plot-suite"),
    shell:
        "python -m clipeval plot-suite {input.suite:q} --arguments-file {params.arguments:q} --output {output.figure:q}"
        " > {log:q} 2>&1"
