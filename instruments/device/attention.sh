#!/usr/bin/env bash
# One device call for the attention ladder: smoke every variant (in parallel, each under timeout:
# a protocol bug hangs), then the GPU tests of the variants that passed, the benchmark, ConSan.
# Usage: bash instruments/device/attention.sh [smoke] [test] [bench|quick|sweep] [consan]
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,driver_version --format=csv | tee "$OUT/smi.txt"
ALL="sequential pipelined ws ws_pingpong overlap fa3"
good="$ALL"
for step in "$@"; do
  case $step in
  smoke)
    for v in $ALL; do (timeout 150 python3 -m instruments.tools.smoke_attention $v > "$OUT/smoke_$v.log" 2>&1; echo "exit $?" >> "$OUT/smoke_$v.log") & done
    wait
    good=""
    for v in $ALL; do
      tail -3 "$OUT/smoke_$v.log" | sed "s/^/[$v] /"
      grep -q "exit 0" "$OUT/smoke_$v.log" && good="$good $v"
    done
    cat "$OUT"/smoke_*.log > "$OUT/smoke.log"; rm -f "$OUT"/smoke_*.log
    echo "smoke passed: $good" ;;
  test)
    sel=$(for v in $good; do printf "%s or " "$v"; done); sel="(${sel% or }) and not consan"
    timeout 300 python3 -m pytest tests/kernels/test_attention_gpu.py -q -p no:cacheprovider -n 12 -k "$sel" 2>&1 | tee "$OUT/pytest.log" | tail -25 ;;
  bench|quick|sweep)
    extra=""; [[ $step == quick ]] && extra="--quick"; [[ $step == sweep ]] && extra="--sweep"
    vs=$(echo $good | tr " " ","); [[ -n $vs ]] || continue
    timeout 400 python3 -m instruments.bench_attention $extra --variants "$vs" --out "$OUT" --out results 2>&1 | tee "$OUT/bench.log" | grep -v '^{' ;;
  consan)
    timeout 250 python3 -m pytest tests/kernels/test_attention_gpu.py -q -p no:cacheprovider -k consan 2>&1 | tee "$OUT/consan.log" | tail -30 ;;
  esac
done
