#!/usr/bin/env bash
# One device call: persistent fa3 (kernels/attention/persistent.py), its GPU
# tests under a timeout, then (only if they pass) the grid and tab. 2's shape with fa3 plain and
# persistent beside cuDNN and SDPA flash in the same interleaved rounds, then ConSan.
# Usage: bash instruments/device/persistent.sh STEP...
#   tests   the persistent GPU tests (float64: ragged S, S = 1, causal, bf16, LSE, d 64/128/256)
#   grid    bench_attention --grid with $GRID_VARIANTS, the headline with the same
#   consan  the ConSan test of persistent fa3 (2 CTAs over 9 tiles, d 128 and 256)
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,power.limit,driver_version --format=csv | tee -a "$OUT/steps.log"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/steps.log"
GRID=${GRID_VARIANTS:-fa3+plain,fa3+persistent}
ok=1
for step in "$@"; do
  t0=$(date +%s)
  case $step in
  tests)
    timeout ${T_TESTS:-200} python3 -m pytest tests/kernels/test_attention_gpu.py -q -p no:cacheprovider -n 14 -k "persistent and not consan" 2>&1 | tee -a "$OUT/tests.log" | tail -15
    [ "${PIPESTATUS[0]}" = 0 ] || ok=0 ;;
  grid)
    if [ $ok = 1 ]; then
      timeout ${T_GRID:-280} python3 -m instruments.bench_attention --grid --variants "$GRID" --headline-variants "$GRID" --out "$OUT/grid" 2>&1 | tee "$OUT/grid.log" | grep -v '^{'
    else echo "grid skipped: the tests failed"; fi ;;
  consan)
    timeout ${T_CONSAN:-150} python3 -m pytest tests/kernels/test_attention_gpu.py -q -p no:cacheprovider -k "consan_persistent" 2>&1 | tee -a "$OUT/consan.log" | tail -8 ;;
  esac
  echo "step $step: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$OUT/steps.log"
