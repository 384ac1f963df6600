# exercise: ch05_idle
# file: idle.py
# loses: test_exposed_softmax_synthetic, test_exposed_softmax_of_the_model
# bug: part 1 copied from the release: `records/spans.py`'s busy_fractions, which answered the
#      exercise's old first part (the tensor core's idle fraction) outright. The exposed softmax
#      is not something the release computes: the SFU's busy share alone counts the exps that
#      tensor work hides too (class 7).
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


def busy_fractions(lane, window):
    """Share of the window each span name covers (overlapping spans of one name count once)."""
    lo, hi = window
    out = {}
    for name in dict.fromkeys(n for n, _, _ in lane):
        ivs = sorted((max(s, lo), min(e, hi)) for n, s, e in lane if n == name and e > lo and s < hi)
        covered, cursor = 0.0, lo
        for s, e in ivs:
            s = max(s, cursor)
            if e > s:
                covered += e - s
                cursor = e
        out[name] = covered / (hi - lo) if hi > lo else 0.0
    return out


def exposed_softmax(tensor, sfu, t0, t1):
    return busy_fractions([("sfu", s, e) for s, e in sfu], (t0, t1)).get("sfu", 0.0)


def predict_ws_idle(hw, block_n, headdim):
    def wgmma(n, k, a_from_smem):
        math_clk = 2 * 64 * n * 16 / hw.tensor_flop_per_clk
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
