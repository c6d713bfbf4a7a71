#!/bin/bash
# Fill .whl/ (ignored by git) with the wheels a lent GPU machine lacks for scripts/gpu_checks.sh peer: clipeval's
# dependencies that its image does not hold (Snakemake and what it needs, open_clip, lmdb, FAISS's CPU build,
# jsonlines, orjson, jsonschema) and CLIP_benchmark's, for its Python 3.12. The device tool carries the folder
# (64 MiB at most a call): pycocoevalcap's wheel holds 100 MB of Java programs and data for captioning metrics that
# CLIP_benchmark only imports for retrieval, so it travels without them.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >>.git/info/exclude
rm -rf .whl
mkdir .whl
WHEELS=(
  snakemake==9.27.1 snakemake-interface-common==1.23.0 snakemake-interface-executor-plugins==9.4.0
  snakemake-interface-logger-plugins==2.1.0 snakemake-interface-report-plugins==1.3.0
  snakemake-interface-scheduler-plugins==2.0.2 snakemake-interface-storage-plugins==4.4.1
  argparse-dataclass==2.0.0 conda-inject==1.3.2 configargparse==1.9.0 docutils==0.22.4 dpath==2.2.0
  fastjsonschema==2.22.3 gitdb==4.0.12 gitpython==3.2.1 humanfriendly==10.0 immutables==0.21 jupyter-core==5.9.1
  nbformat==5.11.1 platformdirs==4.14.8 pulp==3.3.2 smart-open==7.7.1 smmap==5.0.3 tenacity==9.2.1
  termcolor==3.3.0 throttler==1.2.3 traitlets==5.16.1 yte==1.9.4 sqlalchemy==2.0.58 sqlmodel==0.0.37 pydantic==2.14.4
  pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 greenlet==3.5.6
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  open-clip-torch==3.3.0 ftfy==6.3.1 wcwidth==0.9.4 lmdb==3.0.0 faiss-cpu==1.15.1 jsonlines==4.0.0 orjson==3.13.0
  clip-benchmark==1.6.2 pycocotools==2.0.11 pycocoevalcap==1.2
)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${WHEELS[@]}"
# Snakemake's connection_pool is published as source only: built here (pure Python).
python3 -m pip wheel -q --no-deps -w .whl connection_pool==0.0.3
# pycocoevalcap without its jars and data.
scratch=$(mktemp -d)
(cd "$scratch" && python3 -m zipfile -e "$OLDPWD"/.whl/pycocoevalcap-*.whl . && find . \( -name '*.jar' -o -name '*.gz' \) -delete \
  && find . -name RECORD -exec sed -i -E '/\.(jar|gz),/d' {} + && rm "$OLDPWD"/.whl/pycocoevalcap-*.whl \
  && python3 -m zipfile -c "$OLDPWD"/.whl/pycocoevalcap-1.2-py3-none-any.whl ./*)
rm -rf "$scratch"
du -sh .whl
