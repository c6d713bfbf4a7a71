#!/bin/bash
# The checks to run on a lent GPU machine, from the repository root, with clipeval's dependencies importable:
# the GPU tests and the pixel stage's, then the extraction benchmark on the GPU at fp32, fp16 and bf16 (fp32
# with the sweep table). Everything printed is also written to $OUT (or /tmp/gpu-checks) as it comes.
set -uo pipefail
out=${OUT:-/tmp/gpu-checks}
mkdir -p "$out"
export PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
python3 -c 'import torch, torchvision, open_clip, faiss
print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__,
      "open_clip", open_clip.__version__, "faiss", faiss.__version__)' | tee -a "$out/device.txt"
python3 -m pytest -p no:cacheprovider -o addopts="" -q -rs tests/test_gpu.py tests/test_pixels.py tests/test_extract.py \
  2>&1 | tail -25 | tee "$out/tests.txt"
cd benchmarks || exit 1
workers=$(($(nproc) - 1))
for precision in fp32 fp16 bf16; do
  sweep=0
  [ "$precision" = fp32 ] && sweep=10
  python3 extraction.py --device cuda --precision "$precision" --images 1024 --rounds 2 --workers "$workers" \
    --batch-size 64 --sweep-models "$sweep" --sweep-images 2048 2>&1 |
    grep -v -e '^images:' -e WARNING | tee "$out/extraction-$precision.md"
done
