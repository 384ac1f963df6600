# exercise: ch05_idle
# file: idle.py
# loses: test_predict_other_tiles_and_hardware, test_predict_at_a_formulas_speed
# bug: a wgmma's math as n / 2 clk, the H100 whitepaper's 4096 dense FLOP/clk/SM typed in instead
#      of read from the Hardware: within 0.001 on the datasheet preset (4095.9), wrong on any
#      Hardware with another tensor rate.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 05 — where does the tensor core's time go? Predict it, then measure it.

1. ``exposed_softmax(tensor, sfu, t0, t1)``: the fraction of the window [t0, t1) in which the
   SFU is busy and the tensor core is not — the exps that no tensor work hides, the time
   pingpong and the intra-warpgroup overlap go after. ``tensor`` and ``sfu`` are each a list of
   busy intervals (start, end), possibly overlapping (two warpgroups' work), possibly reaching
   outside the window.


2. ``predict_ws_idle(hw, block_n, headdim)``: *before* running anything, the tensor core's idle
   fraction in the steady state of the `ws` attention schedule with **one** consumer warpgroup
   (64 query rows, ``block_m = 64``) and a producer that keeps the ring full. Per K/V block the
   consumer runs, one after the other: the Q·Kⱼᵀ wgmma group (SS: 64 × block_n × headdim) and its
   ``warpgroup_mma_wait`` (results ready ``hw.wgmma_latency_clk`` after the last instruction),
   the softmax of its 64 × block_n scores, the rescale of O (64 × headdim FMULs on
   ``hw.fma_lanes_per_clk``), the pack of P (``hw.softmax_pack_per_elem`` FMA-pipe slots per
   score), then the P·Vⱼ group (RS: 64 × headdim × block_n) and its wait. Chapter 00's costs
   apply (the tensor core is idle while this one warpgroup's softmax runs). What fraction of one block's cycle is the tensor core busy?

The grader runs the model (40 blocks) and measures the idle fraction between the 5th and the
35th score GEMM; your prediction must be within 0.001.
"""
import math


def exposed_softmax(tensor, sfu, t0, t1):
    # sweep the ends of both units' intervals in time order, counting how many of each are open
    marks = sorted([(s, unit, 1) for unit, ivs in enumerate((tensor, sfu)) for s, _ in ivs]
                   + [(e, unit, -1) for unit, ivs in enumerate((tensor, sfu)) for _, e in ivs])
    open_, exposed, last = [0, 0], 0.0, t0
    for t, unit, step in marks:
        a, b = max(last, t0), min(t, t1)
        if b > a and open_[1] and not open_[0]:
            exposed += b - a
        last = max(last, t)
        open_[unit] += step
    return exposed / (t1 - t0)



def predict_ws_idle(hw, block_n, headdim):
    def wgmma(n, k, a_from_smem):
        math_clk = n / 2                  # BUG: the whitepaper's 4096 FLOP/clk typed in
        smem = (64 * 16 * 2 if a_from_smem else 0) + n * 16 * 2
        return math.ceil(k / 16) * (max(math_clk, smem / hw.smem_bytes_per_clk) + hw.wgmma_overhead_clk)

    elems = 64 * block_n
    softmax = (elems / hw.fma_lanes_per_clk + hw.row_reduce_clk
               + max(elems / hw.sfu_exp_per_clk, elems * hw.softmax_fma_per_elem / hw.fma_lanes_per_clk)
               + elems * hw.softmax_stall_per_elem)
    rescale = (64 * headdim + elems * hw.softmax_pack_per_elem) / hw.fma_lanes_per_clk  # and pack P
    qk, pv = wgmma(block_n, headdim, True), wgmma(headdim, block_n, False)
    cycle = qk + hw.wgmma_latency_clk + softmax + rescale + pv + hw.wgmma_latency_clk
    return 1.0 - (qk + pv) / cycle
