#!/usr/bin/env bash
# One device call that runs several independent jobs in priority order, each under its own
# timeout (a barrier-protocol bug hangs rather than crashes), logs and JSON under $OUT.
# Usage: bash instruments/device/session.sh STEP...
#   micro       GPU tests of the microbenchmarks, then `instruments.bench micro` (the h200 preset's rates)
#   attn_probe  fa3 headline by ring depth and launch order, in a fresh then a cached process
#   gemm_probe  pingpong tiles at 8192^3 fp16+bf16, CUDA-graph replays at small sizes
#   gemm_bench  `instruments.bench gemm`: the whole GEMM ladder, interleaved rounds, clock logged
#   attn_bench  `instruments.bench_attention --sweep`: the attention ladder and the FA3 fig. 5 sweep
#   attn_tests  the attention GPU tests (every variant against float64), 8 workers
#   attn_trace  Proton timelines, with their time, of the overlapped kernels (fa3, overlap)
#   gemm_tests  the GEMM GPU tests, then their ConSan test in a step of its own
#   consan_probe each GEMM configuration of the ConSan test alone, timed
#   gemm_trace  a Proton timeline of the pingpong GEMM (the lanes the model's are laid under)
#   probes      Proton timelines, with their time, of instruments.trace.PROBES (the s2/s3 rings,
#               the in-line attention kernels: their copies' hand-offs and their clocks)
#   issue       wgmma issue microbenchmark: issue cost, queue depth, SS vs RS
#   clock_streams the SM clock under ~2 s of a wgmma, an L2 (TMA) and an exp2 stream on every SM
#               (instruments/micro/clock.py -> h200-clock.json: points of the power cap's plane)
#   l2_probe    Nsight Compute: L2 hit rate, DRAM bytes, SM clock of each fidelity kernel
#   stall_probe Nsight Compute's full set on the plain attention kernels: cycles, pipes, stall
#               reasons per SASS instruction (instruments/tools/stall_probe.py)
#   stall_dims  the same on fa3 at d 64 and d 256 (results/h200-stall-dims.json)
#   stall_sweep Nsight Compute's cycles of fa3 at the attention sweep's shapes (results/h200-stall-sweep.json)
#   gemm_sweep  the GEMM sweep: ncu cycles, CUPTI device time beside do_bench (instruments/tools/gemm_sweep.py)
#   launch      a CTA's turnover on an SM and its cold first copy (instruments/micro/launch.py)
#   launch_ncu  the same under Nsight Compute: each launch's duration and cycles
#   trace_d256  a Proton timeline of fa3 at d 256
#   trace_s1k   Proton timelines of fa3 at S 1K (d 128, 256): a CTA's prologue and epilogue
#   pers_no_turns the persistent fa3 with no_turns: its GPU test, the d 64 grid beside the default
#   chains      the softmax switches tree_max + lane_sum (short chains) and poly_exp (a quarter
#               of the exps as a polynomial): their GPU tests, then the grid beside the default
#               ($CHAINS_VARIANTS)
#   consan_persistent the persistent fa3's ConSan test (6 runs)
#   one_release the persistent fa3 with one arrive a block for K_j and V_{j-1}: its GPU test,
#               then d 64's grid beside the default
#   consan_one_release its ConSan test
#   mask_ab     fa3's default launch of this tree against the tree unpacked in ab_base_mask/ (an
#               untracked folder: `git archive <commit> kernels sim/tiles.json | tar -x -C
#               ab_base_mask`) at the grid's causal S 1K and 4K points, beside cuDNN; then the
#               causal GPU tests
#   twin_persistent the CUDA twin's persistent launch: its GPU tests, then `bench_cuda --tiles`
#   live_half   causal blocks whose right half is all masked take the left half alone: its GPU
#               test, then d 64 / d 128 at S 1K and 4K beside the default
#   d64_stages  d 64's short launch (128x128, pairs) with three ring slots and no turns, beside
#               the default
#   trace_d64_causal a Proton timeline of fa3's default launch at d 64 S 1K causal (persistent, pairs)
#   align       the ragged GEMMs with and without 128-byte row strides (instruments/tools/align_probe.py)
#   pair        the SM-to-SM crossing: an mbarrier ping-pong inside one SM and across the two
#               CTAs of a cluster of two (instruments/micro/pair.py -> h200-pair.json); its GPU
#               test first (it also builds pair.cu, ~1 min cold)
#   rescale     O's 128 FMULs a thread after 16 queued Q·Kᵀ wgmmas, beside each alone
#               (instruments/micro/rescale.py -> h200-rescale.json); its GPU test first
#   trace_no_turns a Proton timeline of fa3+lane_sum+no_turns at d 256
#               (traces/attention_fa3_d256+lane_sum+no_turns.{trace,summary}.json)
#   d64_tiles   d 64 at S 1K/4K: fa3's pairs launch at 128x64 and with three stages, beside the
#               default
#   defaults    fa3's default launch (causal in pairs): its GPU test, the grid with fa3+plain
#   cond_rescale fa3 with FA4's conditional rescaling: its GPU tests, then the grid beside the
#               default (d 256: with the default's lane_sum)
#   d256_80     fa3 at FA3's d 256 tile, 128x80 (a K/V block as a 64- and a 16-row piece): its
#               GPU test, then the d 256 grid beside the default 128x64
#   gputests    every `gpu` test of tests/kernels except ConSan, 12 workers
#   grade       the exercises' GPU grading (Gluon ws GEMM, tl attention); run it last: with
#               .whl/numpy/ carried it installs numpy < 2.4 for the interpreter's tests
#   grade_wrong the grader's self-test on known-wrong submissions, on the GPU
#   notebooks   chapters 01-05 run as scripts, so their live-GPU cells execute
#   landed      the GPU tests of the attention ladder, the layouts and the GEMM ladder (no ConSan),
#               each test's result logged as it ends (a timeout keeps what finished)
#   grid        `instruments.bench_attention --grid`: fa3 (or $GRID_VARIANTS) beside cuDNN and SDPA
#   pairs       persistent fa3 with the causal tiles in pairs (`persistent="pairs"`): its GPU tests,
#               then the grid beside plain, the zigzag and cuDNN
#   graph_s1k   the S 1K grid points (fa3, cuDNN, SDPA) timed as CUDA-graph replays
#   consan_turns fa3's ConSan tests, one build a test (default, rescale_early+no_turns,
#               one_release+named_turns)
#   layouts     `instruments.bench_layouts`: the layouts users hand in, beside the contiguous ones
#   layouts_consan the layouts' GPU tests under ConSan
#   plans       launch plans (kernels/plans.py): their GPU tests, the host path probe
#               (instruments/tools/host_path.py), then the grid with fa3 beside fa3+unplanned
#   gemm_ab     the pipelined GEMM against the kernels unpacked in ab_base_pipelined/ (an untracked
#               folder: `git archive <commit> kernels | tar -x -C ab_base_pipelined`), beside cuBLAS
# Carry `.whl` (simpy, pytest, ...) for the steps that import the model or the grader.
# Logs and JSON are written to a work folder and packed at the end into $OUT/session.tgz (the
# device tool returns at most 8 files), beside $OUT/session.log.
set -u
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
FINAL=${OUT:-/tmp/out}; mkdir -p "$FINAL"
OUT=/tmp/session_work; rm -rf "$OUT"; mkdir -p "$OUT"
trap 'tar czf "$FINAL/session.tgz" -C "$OUT" . ; cp "$OUT/session.log" "$FINAL/"' EXIT
if compgen -G ".whl/*.whl" > /dev/null; then
  pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export TRITON_CACHE_DIR=/tmp/tcache
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,driver_version --format=csv,noheader; }
echo "start $(date -u +%FT%TZ) $(smi)" | tee "$OUT/session.log"
python3 -c "import numpy, torch, triton; print('numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/session.log"
BUDGET=${BUDGET:-560}  # seconds for all steps: the device call itself stops at 600
step_run() {  # name timeout command...  (the timeout shrinks to what is left of BUDGET)
  local name=$1 t=$2; shift 2
  local t0=$SECONDS left=$((BUDGET - SECONDS))
  (( left < t )) && t=$left
  (( t < 10 )) && { echo "== $name skipped: no time left" | tee -a "$OUT/session.log"; return; }
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s $(smi)" | tee -a "$OUT/session.log"
  grep -v '^{' "$OUT/$name.log" | tail -${TAIL:-25}
}
for step in "$@"; do
  case $step in
  micro)
    step_run micro_pytest 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/instruments/test_micro_gpu.py
    step_run micro 300 python3 -m instruments.bench micro --out "$OUT" ;;
  attn_probe)
    step_run attn_probe_fresh 150 python3 -m instruments.tools.order_probe fresh
    step_run attn_probe_cached 100 python3 -m instruments.tools.order_probe cached ;;
  gemm_probe)
    step_run gemm_probe 300 python3 -m instruments.bench gemm_probe --out "$OUT" ;;
  gemm_bench)
    TAIL=70 step_run gemm_bench 400 python3 -m instruments.bench gemm --out "$OUT" ;;
  attn_bench)
    TAIL=80 step_run attn_bench 400 python3 -m instruments.bench_attention --sweep --out "$OUT" ;;
  attn_tests)
    TAIL=12 step_run attn_tests 320 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu -n 8 tests/kernels/test_attention_gpu.py ;;
  attn_trace)
    TAIL=40 step_run attn_trace 250 python3 -m instruments.trace --out "$OUT/traces" --only attention_fa3 attention_overlap ;;
  gemm_tests)
    TAIL=12 step_run gemm_tests 200 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu -n 8 tests/kernels/test_gemm_gpu.py -k "not consan"
    TAIL=12 step_run gemm_consan 400 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu tests/kernels/test_gemm_gpu.py -k consan ;;
  consan_probe)
    for cfg in "ws_pingpong 2 128x128x64" "ws_pingpong 2" "ws_pingpong 4"; do
      TRITON_INSTRUMENTATION_MODE=consan TAIL=4 step_run "consan_${cfg// /_}" 100 \
        python3 -m instruments.tools.consan_gemm $cfg
    done ;;
  gemm_trace)
    step_run gemm_trace 200 python3 -m instruments.trace --only gemm_ws_pingpong --out "$OUT/traces" ;;
  probes)
    TAIL=40 step_run probes 450 python3 -m instruments.trace --out "$OUT/traces" --only \
      $(python3 -c "from instruments.trace import PROBES; print(*PROBES)") ;;
  issue)
    TAIL=30 step_run issue "200" python3 -m instruments.micro.issue --out "$OUT" ;;
  clock_streams)  # the short GPU tests first (a hang or a failed check costs seconds, not 2 s runs)
    TAIL=6 step_run clock_tests 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/instruments/test_micro_gpu.py -k "clock"
    TAIL=8 step_run clock_streams 150 python3 -m instruments.micro.clock --out "$OUT" ;;
  l2_probe)
    # keep only the metrics this ncu knows (an unknown one fails the whole run)
    ncu --query-metrics --chip gh100 > "$OUT/ncu_metrics.txt" 2>&1
    want="gpu__time_duration.sum sm__cycles_elapsed.avg.per_second dram__bytes_read.sum
          lts__t_sectors_op_read.sum lts__t_sector_op_read_hit_rate.pct lts__t_sector_hit_rate.pct
          lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_ltcfabric.sum
          lts__t_sectors_srcnode_gpc.sum lts__t_sectors_srcunit_tex.sum"
    metrics=""
    for m in $want; do grep -Eq "^ *${m%%.*}( |$)" "$OUT/ncu_metrics.txt" && metrics="$metrics,$m"; done
    [ -z "$metrics" ] && metrics=",gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_op_read_hit_rate.pct"
    echo "ncu metrics: ${metrics#,}" | tee -a "$OUT/session.log"
    grep -i "fabric" "$OUT/ncu_metrics.txt" | head -20 >> "$OUT/session.log"
    TAIL=20 step_run l2_ncu 300 ncu --clock-control none --csv --page raw --log-file "$OUT/l2_ncu.csv" \
      -k 'regex:^(sequential|pipelined|ws|ws_pingpong|overlap|fa3)_kernel' --metrics "${metrics#,}" \
      python3 -m instruments.tools.l2_probe
    step_run l2_parse 30 python3 -m instruments.tools.l2_probe --parse "$OUT/l2_ncu.csv" --out "$OUT/l2_probe.json" ;;
  stall_probe)
    TAIL=20 step_run stall_ncu 400 ncu --clock-control none --set full --import-source no -f \
      -o /tmp/stall -k 'regex:^(sequential|pipelined|ws|ws_pingpong|overlap|fa3)_kernel' \
      python3 -m instruments.tools.stall_probe
    TAIL=2 step_run stall_raw 60 ncu -i /tmp/stall.ncu-rep --page raw --csv
    TAIL=2 step_run stall_details 60 ncu -i /tmp/stall.ncu-rep --page details --csv
    TAIL=2 step_run stall_source 120 ncu -i /tmp/stall.ncu-rep --page source --csv --print-source sass ;;
  stall_dims)  # Nsight Compute's full set on fa3 at d 64 and d 256: the consumers' ledger per head dim
    TAIL=8 step_run dims_ncu 300 ncu --clock-control none --set full --import-source no -f \
      -o /tmp/dims -k 'regex:^fa3_kernel' python3 -m instruments.tools.stall_probe --dims
    TAIL=2 step_run dims_raw 60 ncu -i /tmp/dims.ncu-rep --page raw --csv
    TAIL=2 step_run dims_source 120 ncu -i /tmp/dims.ncu-rep --page source --csv --print-source sass
    TAIL=6 step_run dims_parse 30 python3 -m instruments.tools.stall_probe --dims --parse "$OUT/dims_raw.log" "$OUT/dims_source.log" --out "$OUT/h200-stall-dims.json" ;;
  stall_sweep)  # cycles of fa3 at the sweep's shapes, beside their device time
    TAIL=12 step_run sweep_ncu 300 ncu --clock-control none --csv --page raw --log-file "$OUT/sweep_raw.csv" \
      -k 'regex:^fa3_kernel' --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.avg.pct_of_peak_sustained_elapsed,launch__block_size \
      python3 -m instruments.tools.stall_probe --sweep
    step_run sweep_parse 30 python3 -m instruments.tools.stall_probe --sweep --parse "$OUT/sweep_raw.csv" - --out "$OUT/h200-stall-sweep.json" ;;
  gemm_sweep)  # the GEMM sweep's cycles (ncu), device time (CUPTI) beside do_bench
    TAIL=6 step_run gemm_sweep_ncu 240 ncu --clock-control none --csv --page raw --log-file "$OUT/gemm_sweep_raw.csv" \
      -k 'regex:^(sequential|pipelined|ws|ws_pingpong)_kernel' \
      --metrics "$(python3 -c 'from instruments.tools.gemm_sweep import NCU_METRICS; print(NCU_METRICS)')" \
      python3 -m instruments.tools.gemm_sweep launch
    TAIL=4 step_run gemm_sweep_device 240 python3 -m instruments.tools.gemm_sweep device --out "$OUT/gemm_sweep_device.json"
    TAIL=60 step_run gemm_sweep_parse 30 python3 -m instruments.tools.gemm_sweep parse "$OUT/gemm_sweep_raw.csv" \
      "$OUT/gemm_sweep_device.json" --out "$OUT/h200-gemm-sweep.json" ;;
  launch)  # a CTA's turnover on an SM and its cold first copy
    TAIL=12 step_run launch 120 python3 -m instruments.micro.launch --out "$OUT" ;;
  launch_ncu)  # the same launches under Nsight Compute: what a whole launch costs beyond its CTAs
    TAIL=12 step_run launch_ncu 120 ncu --clock-control none --csv --page raw --log-file "$OUT/launch_ncu.csv" \
      -k 'regex:cta_launch' --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second \
      python3 -m instruments.micro.launch ;;
  trace_d256)  # Proton timeline of fa3 at d 256 (its clock is one of the power cap's points)
    TAIL=30 step_run trace_d256 200 python3 -m instruments.trace --out "$OUT/traces" --only attention_fa3_d256 ;;
  trace_s1k)  # Proton timelines of fa3 at S 1K, d 128 and 256: a CTA's phases
    TAIL=30 step_run trace_s1k 200 python3 -m instruments.trace --out "$OUT/traces" --only attention_fa3_s1k attention_fa3_s1k_d256 ;;
  pers_no_turns)  # the persistent fa3 without turns: its GPU test, then d 64's grid beside the default
    TAIL=8 step_run pers_no_turns_tests 200 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu \
      tests/kernels/test_attention_gpu.py -k "persistent_large_magnitude"
    TAIL=40 step_run pers_no_turns_grid 200 python3 -m instruments.bench_attention --grid --dims 64 \
      --variants fa3,fa3@128x128+pairs+no_turns --out "$OUT" ;;
  chains)  # the softmax's short chains and poly_exp on the default launch: tests, grid
    TAIL=8 step_run chains_tests 240 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu \
      tests/kernels/test_attention_gpu.py -k "short_launch_with_softmax_switches or poly_exp_on_the_grid"
    TAIL=60 step_run chains_grid 400 python3 -m instruments.bench_attention --grid --variants \
      "${CHAINS_VARIANTS:-fa3,fa3+tree_max+lane_sum,fa3+poly_exp,fa3+tree_max+lane_sum+poly_exp}" \
      --headline-variants fa3 \
      --out "$OUT" ;;
  d64_stages)  # d 64's short launch with a third ring slot, without turns (and the short chains)
    TAIL=30 step_run d64_stages 200 python3 -m instruments.bench_attention --grid --dims 64 --variants \
      fa3,fa3:s3@128x128+pairs+no_turns,fa3:s3@128x128+pairs+tree_max+lane_sum+no_turns --out "$OUT" ;;
  one_release)  # one_release on the persistent fa3: its GPU test, then d 64's grid beside the default
    TAIL=8 step_run one_release_tests 150 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu \
      tests/kernels/test_attention_gpu.py -k "test_persistent_one_release"
    TAIL=30 step_run one_release_grid 100 python3 -m instruments.bench_attention --grid --dims 64 \
      --variants fa3,fa3+no_turns+one_release --out "$OUT" ;;
  consan_one_release)  # ConSan on the persistent fa3 with one_release (3 runs)
    TAIL=8 step_run consan_one_release 240 python3 -m pytest -q -rf --tb=short -p no:cacheprovider \
      -m gpu tests/kernels/test_attention_gpu.py -k "consan_one_release_persistent" ;;
  mask_ab)  # a change to every causal build: A/B at the short causal points (each side checked
            # against float64 first), then the causal GPU tests (ragged lengths, layouts)
    TAIL=14 step_run mask_ab 150 python3 tests/kernels/ab_base.py ab_base_mask --seqlens 1024,4096 \
      --causal-only --rounds 5 --out "$OUT"
    TAIL=8 step_run mask_tests 240 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu \
      -n 12 tests/kernels/test_attention_gpu.py tests/kernels/test_layouts_gpu.py \
      -k "causal and not consan" ;;
  live_half)  # the live half of a causal block: float64 first, then beside the default build
    TAIL=8 step_run live_half_tests 150 python3 -m pytest -q -rf --tb=short -p no:cacheprovider \
      -m gpu tests/kernels/test_attention_gpu.py -k "live_half"
    TAIL=20 step_run live_half_64 100 python3 -m instruments.bench_attention --grid --dims 64 \
      --seqlens 1024,4096 --variants fa3,fa3+no_turns+live_half --out "$OUT/live_half_64"
    TAIL=20 step_run live_half_128 100 python3 -m instruments.bench_attention --grid --dims 128 \
      --seqlens 1024,4096 --variants fa3,fa3+live_half --out "$OUT/live_half_128" ;;
  twin_persistent)  # the CUDA twin's persistent launch: its GPU tests (a lost phase hangs: -x
                    # under the step's timeout), then every tile on the grid beside Gluon fa3
    TAIL=8 step_run twin_tests 150 python3 -m pytest -q -x -rf --tb=short -p no:cacheprovider \
      -m gpu -n 8 tests/kernels/test_cuda_persistent_gpu.py tests/kernels/test_cuda_tiles_gpu.py
    TAIL=4 step_run twin_bench 170 python3 -m instruments.bench_cuda --tiles --out "$OUT" ;;
  consan_persistent)  # the persistent fa3 under ConSan (d 128/256 with turns, d 64 without)
    TAIL=8 step_run consan_persistent 300 python3 -m pytest -q -rf --tb=short -p no:cacheprovider \
      -m gpu tests/kernels/test_attention_gpu.py -k "consan_persistent" ;;
  trace_d64_causal)  # fa3's default launch at d 64 S 1K causal (persistent, pairs): a CTA's tiles
    TAIL=30 step_run trace_d64_causal 300 python3 -m instruments.trace --out "$OUT/traces" \
      --only attention_fa3_s1k_d64_causal ;;
  pair)  # a lost phase hangs: the test's short runs first, each step under its timeout
    TAIL=8 step_run pair_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/instruments/test_micro_gpu.py -k "sm_pair"
    TAIL=8 step_run pair 120 python3 -m instruments.micro.pair --out "$OUT" ;;
  rescale)
    TAIL=6 step_run rescale_tests 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/instruments/test_micro_gpu.py -k "rescale"
    TAIL=6 step_run rescale 120 python3 -m instruments.micro.rescale --out "$OUT" ;;
  trace_no_turns)  # the build with fa3's softmax switches lane_sum (d 256's default) and no_turns
    TAIL=30 step_run trace_no_turns 200 python3 -m instruments.trace --out "$OUT/traces" \
      --only attention_fa3_d256 --softmax lane_sum,no_turns ;;
  align)  # the ragged GEMMs with 128-byte row strides, 8192x8192x4096 without
    TAIL=30 step_run align 200 python3 -m instruments.tools.align_probe --out "$OUT/h200-align.json" ;;
  gputests)
    TAIL=8 step_run gputests 300 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/kernels -k "not consan and not micro" ;;
  grade)  # the Triton 3.6 interpreter needs numpy < 2.4 where the sandbox imports it (the system's
           # site-packages, not PYTHONPATH): carry its wheel in .whl/numpy/ (this step replaces numpy)
    if compgen -G ".whl/numpy/*.whl" > /dev/null; then
      python3 -m pip install -q --no-index --no-deps --break-system-packages .whl/numpy/*.whl \
        > "$OUT/numpy_install.log" 2>&1 || python3 -m pip install -q --no-index --no-deps .whl/numpy/*.whl
    fi
    step_run grade 240 python3 -m exercises grade --only ch02_ws_gluon --only ch04_tl_attention --student gpu-check -v ;;
  grade_wrong)  # the known-wrong GPU-graded submissions, graded as a student's would be: each must
                # lose the tests its header names (`# loses:`), the GPU ones included
    # (the two that deadlock, waits_on_empty and empty_count_two, end their GPU tests at their
    # timeouts, 300 + 420 s, more than a device call holds; their CPU losses are checked on every
    # CI run). WRONG_FROM=NAME starts at that file, to go on where an earlier call stopped;
    # WRONG_ONLY="NAME ..." grades those files alone.
    for w in exercises/wrong/ch02_consumer_*.py exercises/wrong/ch02_gluon_*.py \
             exercises/wrong/ch04_tl_*.py exercises/wrong/cheat_surface_tl_*.py; do
      [[ $w == *waits_on_empty* || $w == *empty_count_two* ]] && continue
      [[ -n ${WRONG_FROM:-} && $(basename "$w" .py) < $WRONG_FROM ]] && continue
      [[ -n ${WRONG_ONLY:-} && " $WRONG_ONLY " != *" $(basename "$w" .py) "* ]] && continue
      ex=$(sed -n 's/^# exercise: //p' "$w"); f=$(sed -n 's/^# file: //p' "$w")
      rm -rf /tmp/wrong && mkdir -p "/tmp/wrong/$ex" && cp "$w" "/tmp/wrong/$ex/$f"
      echo "$(basename "$w"): $(sed -n 's/^# loses: //p' "$w")"
      TAIL=12 step_run "wrong_$(basename "$w" .py)" 200 python3 -m exercises grade /tmp/wrong --only "$ex" -v
    done ;;
  landed)
    TAIL=30 step_run landed 560 python3 -m pytest -v -rfE --tb=short -p no:cacheprovider -m gpu -n 16 \
      tests/kernels/test_layouts_gpu.py tests/kernels/test_gemm_gpu.py tests/kernels/test_attention_gpu.py -k "not consan" ;;
  grid)
    TAIL=60 step_run grid 400 python3 -m instruments.bench_attention --grid --variants "${GRID_VARIANTS:-fa3}" \
      --headline-variants fa3 --out "$OUT" ;;
  pairs)  # persistent fa3 with its causal tiles in pairs: correctness, then beside the zigzag
    TAIL=8 step_run pairs_tests 300 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu -n 8 \
      tests/kernels/test_attention_gpu.py -k "pairs"
    TAIL=70 step_run pairs_grid 400 python3 -m instruments.bench_attention --grid \
      --variants fa3,fa3+plain,fa3+persistent,fa3+pairs,fa3@128x128+pairs --headline-variants fa3 \
      --out "$OUT" ;;
  defaults)  # fa3's default launch (causal in pairs): its GPU test, then the grid beside cuDNN
    TAIL=8 step_run defaults_tests 240 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu -n 6 \
      tests/kernels/test_attention_gpu.py -k "short_launch_defaults"
    TAIL=70 step_run defaults_grid 400 python3 -m instruments.bench_attention --grid \
      --variants fa3,fa3+plain --headline-variants fa3 --out "$OUT" ;;
  cond_rescale)  # conditional rescaling against float64, then beside the default in one grid
    TAIL=8 step_run cond_tests 240 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu \
      -n 6 tests/kernels/test_attention_gpu.py -k "cond_rescale"
    TAIL=40 step_run cond_grid_64_128 330 python3 -m instruments.bench_attention --grid \
      --dims 64,128 --variants fa3,fa3+cond_rescale --headline-variants fa3 --out "$OUT/cond_64_128"
    TAIL=30 step_run cond_grid_256 200 python3 -m instruments.bench_attention --grid --dims 256 \
      --variants fa3,fa3+lane_sum+cond_rescale --headline-variants fa3 --out "$OUT/cond_256" ;;
  d256_80)  # fa3 at 128x80 against float64 (ragged S, causal and not), then beside 128x64
    TAIL=8 step_run d256_80_tests 240 python3 -m pytest -q -rf --tb=short -p no:cacheprovider \
      -m gpu -n 4 tests/kernels/test_attention_gpu.py -k "block_in_pieces"
    TAIL=30 step_run d256_80_grid 240 python3 -m instruments.bench_attention --grid --dims 256 \
      --variants fa3,fa3@128x80 --out "$OUT/d256_80" ;;
  d64_tiles)  # d 64 causal at S 1K/4K: the pairs launch at 128x64, three stages, the default
    TAIL=40 step_run d64_tiles 300 python3 -m instruments.bench_attention --grid --dims 64 \
      --seqlens 1024,4096 --variants fa3,fa3@128x64+pairs,fa3:s3@128x64+pairs,fa3:s3@128x128+pairs \
      --out "$OUT" ;;
  graph_s1k)  # the S 1K points timed as CUDA-graph replays: no host path inside the timed window
    TAIL=40 step_run graph_s1k 300 python3 -m instruments.bench_attention --grid --graph --seqlens 1024 \
      --variants fa3,fa3+plain --out "$OUT" ;;
  consan_turns)  # fa3's switch builds under ConSan, one build a test (the turn move's open verdict)
    TAIL=8 step_run consan_turns 500 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu -n 2 \
      tests/kernels/test_attention_gpu.py -k "consan_ws_variants and fa3" ;;
  layouts)
    TAIL=40 step_run layouts 400 python3 -m instruments.bench_layouts --rounds 3 --out "$OUT" ;;
  layouts_consan)
    TAIL=12 step_run layouts_consan 300 python3 -m pytest -q -rfE --tb=short -p no:cacheprovider -m gpu -n 12 \
      tests/kernels/test_layouts_gpu.py -k consan ;;
  plans)  # a call by its launch plan: right and the same, its host time, then the grid
    TAIL=8 step_run plans_tests 300 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -m gpu -n 6 \
      tests/kernels/test_plans_gpu.py
    TAIL=12 step_run host_path 150 python3 -m instruments.tools.host_path "$OUT/host_path.json"
    TAIL=70 step_run plans_grid 400 python3 -m instruments.bench_attention --grid \
      --variants fa3,fa3+unplanned --headline-variants fa3 --out "$OUT" ;;
  gemm_ab)
    TAIL=30 step_run gemm_ab 300 python3 tests/kernels/ab_base.py ab_base_pipelined --gemm pipelined \
      --rounds 5 --out "$OUT" ;;
  notebooks)
    for nb in 01_tma_and_the_ring 02_warp_specialization 03_pingpong 05_fa3_ablation; do
      TAIL=6 step_run "nb_$nb" 120 python3 "notebooks/$nb.py"
    done ;;
  *) echo "unknown step $step"; exit 2 ;;
  esac
done
echo "end $(date -u +%FT%TZ)" | tee -a "$OUT/session.log"
