#!/bin/bash
# The checks to run on a lent GPU machine, from the repository root, with clipeval's dependencies importable.
#   scripts/gpu_checks.sh tests               the GPU tests and the pixel stage's
#   scripts/gpu_checks.sh bench fp32 fp16 …   the extraction benchmark on the GPU at each precision
#   scripts/gpu_checks.sh peer                CLIP_benchmark beside clipeval on the GPU (benchmarks/peer.py),
#                                             then where its CPU stages spent their time (stage_costs.py)
#   scripts/gpu_checks.sh decoding            decode-pixels by its number of loader processes, up to every core
#   scripts/gpu_checks.sh all                 the stored-pixel GPU tests, decoding (1,000 images), then peer at
#                                             1,000 images, no sweep
# IMAGES (default 2048; 5000 for peer, 1000 under all) and ROUNDS (default 2) size the benchmarks; SWEEP adds the
# sweep (extraction's table: models, default 0; peer's row: checkpoints, default 10, 0 under all, of which
# PEER_SWEEP_RUNS CLIP_benchmark runs are timed, default 2). STAGE_COSTS=0 leaves out peer's stage_costs.py.
# Size a call by what a lent H200 (under gVisor) took here: the three stored-pixel tests 125 s (each clipeval
# command about 15 s on 40 images); `peer` at 5,000 images without the sweep, stage costs included, 300 s (its
# machine started in 40 s); with a 10-checkpoint sweep and no stage costs it did not finish in 455 s (the
# sweep's score jobs ran one at a time). A call has 15 minutes of device time in all, the machine's start
# included.
# On the device machine, with the wheels of scripts/gpu_wheels.sh carried in .whl:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
#     .whl/*.whl && export PYTHONPATH=/tmp/site && scripts/gpu_checks.sh all
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
# Standard input to standard output and to file $1, line by line, without the libraries' warnings: grep
# --line-buffered, so that a run stopped at a lent machine's time limit has written every line it measured.
without_warnings() {
  grep --line-buffered -v -e WARNING | tee "$1"
}
run_tests() {
  python3 -m pytest -p no:cacheprovider -o addopts="" -q -rs tests/test_gpu.py tests/test_pixels.py \
    tests/test_job_servers.py 2>&1 | tail -25 | tee "$out/tests.txt"
}
# The GPU tests of stored pixels (the one that hung on an H200 among them) and of the warm server's CUDA rule,
# stopped at the first failure and bounded, so that a hang costs minutes of no other check.
run_short_tests() {
  timeout -s INT 200 python3 -m pytest -p no:cacheprovider -o addopts="" -q -rs -x --durations=5 \
    tests/test_gpu.py tests/test_job_servers.py -k "stored_pixels or leave_cuda_unstarted" 2>&1 |
    tee "$out/tests.log" | tail -40 >"$out/tests.txt"
  cat "$out/tests.txt"
}
# A first run, a re-run after a metric change and a sweep, then where the CPU stages of the first run spent time,
# as a researcher runs both tools on a GPU node: amp, a loader worker per core but one, batch 256.
run_peer() {
  local kept=/tmp/clipeval-peer-kept
  rm -rf "$kept"
  (cd benchmarks && python3 peer.py --device cuda --precision amp --images "${IMAGES:-5000}" \
    --workers $(($(nproc) - 1)) --batch-size 256 --cores all --sweep "${SWEEP:-10}" \
    --peer-sweep-runs "${PEER_SWEEP_RUNS:-2}" --peer-wheels ../.whl --keep "$kept" \
    2>&1 | without_warnings "$out/peer.md")
  cp "$kept/clipeval/logs/warm_jobs.log" "$out/warm_jobs.log"
  if [ "${STAGE_COSTS:-1}" != 0 ]; then
    (cd benchmarks && python3 stage_costs.py "$kept" 2>&1 | without_warnings "$out/stage_costs.md")
  fi
}
# decode-pixels' rate by loader processes against one core's (benchmarks/decoding.py): on 16 cores, #58 asks 10×.
run_decoding() {
  (cd benchmarks && python3 decoding.py --images "${DECODE_IMAGES:-1000}" 2>&1 | without_warnings "$out/decoding.md")
}
case "${1:-}" in
tests)
  run_tests
  ;;
decoding)
  run_decoding
  ;;
peer)
  run_peer
  ;;
all)
  run_short_tests >/dev/null
  run_decoding >/dev/null
  IMAGES=${IMAGES:-1000} SWEEP=${SWEEP:-0} run_peer >/dev/null
  cat "$out/tests.txt" "$out/decoding.md" "$out/peer.md" "$out/stage_costs.md"
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
  echo "usage: scripts/gpu_checks.sh tests | bench PRECISION... | decoding | peer | all" >&2
  exit 2
  ;;
esac
