#!/usr/bin/env bash
# One device call: smoke each variant (under timeout: a protocol bug hangs, it does not crash),
# then the GPU tests, then the benchmark. Logs and JSON go to $OUT.
# Usage: bash instruments/device/gemm.sh [smoke|test|bench|quick|consan|all] ...
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,driver_version --format=csv | tee "$OUT/smi.txt"
for step in "${@:-all}"; do
  if [[ $step == smoke || $step == all ]]; then
    for v in sequential pipelined ws ws_pingpong; do
      timeout 60 python3 -m instruments.tools.smoke_gemm $v 2>&1 | tail -5 | tee -a "$OUT/smoke.log"
      rc=${PIPESTATUS[0]}; echo "smoke $v exit $rc" | tee -a "$OUT/smoke.log"
      [[ $rc == 0 ]] || failed=1
    done
    if grep -q FAIL "$OUT/smoke.log" || [[ ${failed:-0} == 1 ]]; then
      echo "smoke failed: stopping before tests and benchmark"; exit 1
    fi
  fi
  if [[ $step == test || $step == all ]]; then
    timeout 300 python3 -m pytest tests/kernels -q -p no:cacheprovider -k "not consan" 2>&1 | tee "$OUT/pytest.log" | tail -15
  fi
  if [[ $step == bench || $step == all || $step == quick ]]; then
    extra=""; [[ $step == quick ]] && extra="--quick"
    timeout 400 python3 -m instruments.bench gemm $extra --out "$OUT" 2>&1 | tee "$OUT/bench.log" | grep -v '^{'
  fi
  if [[ $step == consan || $step == all ]]; then
    timeout 240 python3 -m pytest tests/kernels -q -p no:cacheprovider -k consan 2>&1 | tee "$OUT/consan.log" | tail -30
  fi
done
