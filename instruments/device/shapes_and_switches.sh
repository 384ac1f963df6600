#!/usr/bin/env bash
# One device call: GEMM by shape (variant="auto", the wider L2 groups) and fa3's
# SOFTMAX switches (steps.py: the shorter softmax chains, O rescaled under Q·Kᵀ, no turns), each
# step under a timeout, logs to $OUT.
# Usage: bash instruments/device/shapes_and_switches.sh STEP...
#   gemm_explore  python -m instruments.bench gemm_shapes --explore --fp16-only (every candidate)
#   gemm_auto     python -m instruments.bench gemm_shapes (auto, ws, pingpong, cuBLAS; fp16, bf16)
#   gemm_tests    the GEMM GPU tests of auto and the L2 groups
#   attn_tests    the attention GPU tests of fa3 (the softmax switches among them)
#   attn_ab       the headline (full, causal): fa3 with each softmax switch, cuDNN, SDPA flash
#   grid          the grid (d x S x causal): fa3 builds in $GRID_VARIANTS beside cuDNN, SDPA flash
#   sched_tests   the GPU tests of rescale_early / no_turns / one_release / named_turns
#                 (float64, bit-identical, ConSan)
#   sched         (if sched_tests passed) the headline and the grid at d 64, 128: fa3 beside
#                 fa3+rescale_early, fa3+no_turns and both ($SCHED_VARIANTS), cuDNN, SDPA flash
#   sched256      (if sched_tests passed) the grid at d 256: fa3 (lane_sum, the default there)
#                 beside the same switches on top of lane_sum ($SCHED256_VARIANTS: FA3's d 256 is
#                 both), cuDNN, SDPA flash
#   barriers      (if sched_tests passed) fa3's barriers: the headline and the
#                 grid at every d, fa3 beside fa3+one_release, fa3+named_turns and both
#                 ($BARRIER_VARIANTS; at d 256 each on top of lane_sum), cuDNN, SDPA flash
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,power.limit,driver_version --format=csv | tee -a "$OUT/steps.log"
AB=${AB_VARIANTS:-fa3,fa3+tree_max,fa3+lane_sum,fa3+tree_max+lane_sum}
GRID=${GRID_VARIANTS:-fa3,fa3+tree_max+lane_sum}
SCHED=${SCHED_VARIANTS:-fa3,fa3+rescale_early,fa3+no_turns,fa3+rescale_early+no_turns}
SCHED256=${SCHED256_VARIANTS:-fa3,fa3+lane_sum+rescale_early,fa3+lane_sum+no_turns,fa3+lane_sum+rescale_early+no_turns}
BARRIERS=${BARRIER_VARIANTS:-fa3,fa3+one_release,fa3+named_turns,fa3+one_release+named_turns}
sched_ok=1
for step in "$@"; do
  t0=$(date +%s)
  case $step in
  gemm_explore)
    timeout ${T_EXPLORE:-240} python3 -m instruments.bench gemm_shapes --explore --fp16-only --out "$OUT/explore" 2>&1 | tee "$OUT/gemm_explore.log" | grep -v '^{' ;;
  gemm_auto)
    timeout ${T_AUTO:-240} python3 -m instruments.bench gemm_shapes --rounds ${ROUNDS:-7} --out "$OUT/auto" 2>&1 | tee "$OUT/gemm_auto.log" | grep -v '^{' ;;
  gemm_tests)
    timeout 150 python3 -m pytest tests/kernels/test_gemm_gpu.py -q -p no:cacheprovider -n 8 -k "auto" 2>&1 | tee -a "$OUT/tests.log" | tail -5 ;;
  attn_tests)
    timeout ${T_TESTS:-200} python3 -m pytest tests/kernels/test_attention_gpu.py -q -p no:cacheprovider -n 14 -k "fa3 or softmax" 2>&1 | tee -a "$OUT/tests.log" | tail -8 ;;
  attn_ab)
    timeout ${T_AB:-200} python3 -m instruments.bench_attention --grid --variants "" --headline-variants "$AB" --out "$OUT/ab" 2>&1 | tee "$OUT/attn_ab.log" | grep -v '^{' ;;
  grid)
    timeout ${T_GRID:-300} python3 -m instruments.bench_attention --grid --variants "$GRID" --out "$OUT/grid" 2>&1 | tee "$OUT/grid.log" | grep -v '^{' ;;
  sched_tests)
    timeout ${T_SCHED_TESTS:-240} python3 -m pytest tests/kernels/test_attention_gpu.py -q -p no:cacheprovider -n 14 -k "schedule or consan_ws" 2>&1 | tee -a "$OUT/tests.log" | tail -8
    [ "${PIPESTATUS[0]}" = 0 ] || sched_ok=0 ;;
  sched)
    if [ $sched_ok = 1 ]; then
      timeout ${T_SCHED:-300} python3 -m instruments.bench_attention --grid --dims 64,128 --variants "$SCHED" --headline-variants "$SCHED" --out "$OUT/sched" 2>&1 | tee "$OUT/sched.log" | grep -v '^{'
    else echo "sched skipped: the tests failed"; fi ;;
  sched256)
    if [ $sched_ok = 1 ]; then
      timeout ${T_SCHED256:-240} python3 -m instruments.bench_attention --grid --dims 256 --variants "$SCHED256" --out "$OUT/sched256" 2>&1 | tee "$OUT/sched256.log" | grep -v '^{'
    else echo "sched256 skipped: the tests failed"; fi ;;
  barriers)
    if [ $sched_ok = 1 ]; then
      timeout ${T_BARRIERS:-300} python3 -m instruments.bench_attention --grid --dims 64,128 --variants "$BARRIERS" --headline-variants "$BARRIERS" --out "$OUT/barriers" 2>&1 | tee "$OUT/barriers.log" | grep -v '^{'
      timeout ${T_BARRIERS256:-180} python3 -m instruments.bench_attention --grid --dims 256 --variants "${BARRIERS//fa3+/fa3+lane_sum+}" --out "$OUT/barriers256" 2>&1 | tee "$OUT/barriers256.log" | grep -v '^{'
    else echo "barriers skipped: the tests failed"; fi ;;
  esac
  echo "step $step: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
done
