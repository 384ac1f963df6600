"""``ws_pingpong`` — ``ws`` plus ordered turns on the tensor cores (FA3 §3.1, fig. 1;
``sim/attention/ws_pingpong.py``).

Consumer w waits for K_j, then for its turn, issues Q·K_jᵀ, and hands the turn on once its scores
are in, so the consumers' score GEMMs run one warpgroup's after the other's instead of sharing the
tensor cores and both finishing late; each one's softmax then runs under the next one's GEMMs. The
rest of the loop is ``ws``'s (``ws.consumer`` with ``t.TURNS``)::

    consumer WG w, block j:
        acquire(k, j); wait_turn: wait turn[w]; qk: S = Q K_jᵀ; pass_turn: arrive turn[w+1]
        release(k, j); softmax; rescale O      # under the other WG's GEMMs
        acquire(v, j); pack P; pv: O += P V_j; release(v, j)

Gluon has no named-barrier API, so the turns are mbarriers of count 1, one per consumer
(``kernels/ring.py``'s ``wait_turn``/``pass_turn``): consumer 0's first wait falls through, every
later wait needs the previous consumer's hand-over. This is FA3's kernel with the scheduler
barriers on and intra-warpgroup overlap off (tab. 2's "no GEMM-softmax pipelining, with WS",
582 TFLOP/s).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .partitions import warp_specialized
from .ws import consumer, producer


@gluon.jit
def ws_pingpong_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
                       BM: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr,
                       CAUSAL: gl.constexpr, num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    gl.static_assert(num_warps == 4, "the default partition is consumer 0 (one warpgroup)")
    warp_specialized(consumer, producer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
                     BM, STAGES, CONSUMERS, CAUSAL, TURNS=True, PROFILE=PROFILE)
