#!/bin/bash
# The checks to run on a lent GPU machine, from the repository root, with clipeval's dependencies importable.
#   scripts/gpu_checks.sh tests               the GPU tests and the pixel stage's
#   scripts/gpu_checks.sh bench fp32 fp16 …   the extraction benchmark on the GPU at each precision
# IMAGES (default 2048) and ROUNDS (default 2) size the benchmark; SWEEP (default 0) adds the sweep table.
# Everything printed is also written to $OUT (or /tmp/gpu-checks) as it comes, so a run cut short keeps
# what it measured.
set -uo pipefail
out=${OUT:-/tmp/gpu-checks}
mkdir -p "$out"
export PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
python3 -c 'import torch, torchvision, open_clip, faiss
print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__,
      "open_clip", open_clip.__version__, "faiss", faiss.__version__)' | tee -a "$out/device.txt"
case "${1:-}" in
tests)
  python3 -m pytest -p no:cacheprovider -o addopts="" -q -rs tests/test_gpu.py tests/test_pixels.py \
    2>&1 | tail -25 | tee "$out/tests.txt"
  ;;
bench)
  shift
  cd benchmarks || exit 1
  for precision in "$@"; do
    python3 extraction.py --device cuda --precision "$precision" --images "${IMAGES:-2048}" \
      --rounds "${ROUNDS:-2}" --workers $(($(nproc) - 1)) --batch-size 64 --sweep-models "${SWEEP:-0}" \
      --sweep-images 2048 2>&1 | grep -v -e '^images:' -e WARNING | tee "$out/extraction-$precision.md"
  done
  ;;
*)
  echo "usage: scripts/gpu_checks.sh tests | bench PRECISION..." >&2
  exit 2
  ;;
esac
