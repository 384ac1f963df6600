#!/usr/bin/env bash
# One device call for the CUDA twins (kernels/cuda/), in priority order, each step under `timeout`
# (a barrier bug hangs rather than fails): build -> smoke (stop here if it hangs) -> GPU tests
# -> compute-sanitizer memcheck + racecheck on small shapes -> benchmark beside Gluon and the
# peers. Logs and the result JSON go into $OUT/cuda-run.tgz (one file back).
#   usage: bash instruments/device/cuda.sh [--quick | --gemm]   (arguments / BENCH_ARGS go to the
#   benchmark: --gemm = the GEMM settings only, with the ws ablations; --quick = fp16, 3 rounds)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
LOG=$(mktemp -d)
export PYTHONUNBUFFERED=1 KERNELS_CUDA_BUILD=/tmp/cuda-twins-build
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
BENCH_ARGS=${BENCH_ARGS:-"$@"}
t0=$(date +%s)
step() {  # step NAME SECONDS CMD...: run, log, print the tail and the exit code
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout -k 5 "$t" "$@" >"$LOG/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $(( $(date +%s) - s ))s (t=$(( $(date +%s) - t0 ))s)"
  tail -n "${TAIL:-12}" "$LOG/$name.log"
  tar czf "$OUT/cuda-run.tgz" -C "$LOG" .  # after every step: a call cut short keeps its logs
  return $rc
}
finish() { tar czf "$OUT/cuda-run.tgz" -C "$LOG" . ; echo "=== done in $(( $(date +%s) - t0 ))s"; exit "$1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit \
  --format=csv >"$LOG/smi.txt" 2>&1; cat "$LOG/smi.txt"
step build 150 python3 -c "from kernels import cuda; print(cuda.library())" || finish 1
step smoke 60 python3 -m instruments.tools.smoke_cuda
smoke=$?
[ $smoke -eq 124 ] && finish 1  # hung: nothing later can be trusted
TAIL=25 step tests 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_cuda_gpu.py \
  tests/kernels/test_cuda_cond_rescale_gpu.py tests/kernels/test_cuda_compile.py
[ $smoke -ne 0 ] && finish 1  # wrong answers: save the device time for the fixed version
step memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m instruments.tools.smoke_cuda
step racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m instruments.tools.smoke_cuda
TAIL=40 step bench 180 python3 -m instruments.bench_cuda --out "$LOG" $BENCH_ARGS
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >>"$LOG/smi.txt" 2>&1
finish 0
