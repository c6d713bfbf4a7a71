# One command to set up and run the default workflow, one to set up and test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= all
# Another experiment's config instead of config/config.yaml: make run CONFIG=config/examples/muge.yaml
CONFIG ?=
# Which FAISS build knn searches with: cpu, or gpu on a CUDA host (docs/CLUSTER_AND_GPU.md, "On a GPU host").
FAISS ?= cpu
ifeq ($(filter $(FAISS),cpu gpu),)
$(error FAISS must be cpu or gpu, not '$(FAISS)')
endif
INSTALLED := $(BIN)/.installed-$(FAISS)

.PHONY: run follow test test-fast lint clean readme bench experiments leaderboard report

# The two FAISS builds install the same `faiss` package, so switching removes both first.
$(INSTALLED): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip uninstall -y -q faiss-cpu faiss-gpu
	$(BIN)/python -m pip install -c constraints.txt -e '.[test,$(FAISS)]'
	# Chinese-CLIP's models (cn-clip: archs): cn_clip pins an lmdb older than clipeval's, so it comes without
	# its dependencies; its model code needs only torch, torchvision, timm (open_clip's) and six.
	$(BIN)/python -m pip install -c constraints.txt --no-deps cn_clip six
	rm -f $(BIN)/.installed-*
	touch $@

# A config that asks for YTE holds Python that Snakemake runs as it loads the file, and one whose aliases contain
# themselves or expand without bound exhausts Snakemake as it loads it: refused before it does.
REFUSE_UNLOADABLE = $(if $(CONFIG),$(BIN)/python -c 'import sys; from clipeval.storage.config_files import refuse_before_loading; \
	refuse_before_loading(sys.argv[1])' $(CONFIG) &&)

run: $(INSTALLED)
	$(REFUSE_UNLOADABLE) PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --cores $(CORES) $(if $(CONFIG),--configfile $(CONFIG))

# Evaluate a training run's checkpoints as they land (config/README.md); FOLLOW passes options: FOLLOW='--last-step 32'.
FOLLOW ?=
follow: $(INSTALLED)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m clipeval follow $(or $(CONFIG),config/config.yaml) $(FOLLOW)

test: $(INSTALLED)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest

# The unit tests alone (no workflow runs, nothing slow): under two minutes on two cores. Two workers, not the
# suite's four: each worker imports torch, open_clip and scikit-learn as it collects (some 20 s of CPU), and
# these tests wait on little that a third or fourth worker could fill.
test-fast: $(INSTALLED)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -m "not workflow and not slow" -n 2

# After a change that moves the default experiment's numbers: run it and put
# its headline into README.md (a test compares the two).
readme: run
	$(BIN)/python -c 'from clipeval.reporting.summary import embed_headline; embed_headline("README.md", "results/experiments/default/summary.md")'

# The experiment's report (snakemake --report), in its own folder: results/experiments/NAME/report.html, NAME as
# the run chose it (NAME-2 … where another config's experiment holds NAME).
report: run
	name=$$($(BIN)/python -m clipeval experiment-folder $(CONFIG)) && \
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake $(if $(CONFIG),--configfile $(CONFIG)) \
	  --report results/experiments/$$name/report.html

# Every experiment run in this folder, each scored pair with its headline metric.
experiments: $(INSTALLED)
	$(BIN)/python -m clipeval list-experiments

# Every scored (model, dataset) pair in results/ as one table of models × datasets.
leaderboard: $(INSTALLED)
	$(BIN)/python -m clipeval leaderboard --html results/leaderboard.html

# The benchmark suite (benchmarks/): one table per stage, ratios to a floor measured in the same run.
bench: $(INSTALLED)
	cd benchmarks && PATH="$(CURDIR)/$(BIN):$$PATH" $(CURDIR)/$(BIN)/python run.py

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --lint

clean:
	rm -rf results/datasets results/checkpoints results/models results/pixels results/features results/predictions results/experiments logs .snakemake
