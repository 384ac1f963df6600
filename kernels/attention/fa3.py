"""``fa3`` — everything together (``sim/attention/fa3.py``): producer/consumer roles and
setmaxnreg (``ws``), turns on the tensor cores (``ws_pingpong``) and, inside each consumer,
Q·K_jᵀ and P_{j-1}·V_{j-1} issued back to back with the softmax under them (``overlap``).
This is the FlashAttention-3 forward (FA3 §3, tab. 2's 661 TFLOP/s on an H100)::

    producer (1 warp, setmaxnreg 24/32)   consumer WG w (4 warps, setmaxnreg 240/160), 64 rows
    Q; for each block j:                  overlap.consumer with TURNS: per block
        wait k.empty; TMA K_j                 wait k.full(j), v.full(j-1); wait turn[w]
        wait v.empty; TMA V_j                 S_j = Q K_jᵀ; O += P_{j-1} V_{j-1} (both async)
                                              arrive turn[w+1]
                                              wgmma_wait(1); arrive k.empty; softmax j
                                              wgmma_wait(0); arrive v.empty; rescale O
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .common import producer, warp_specialized
from .overlap import consumer


@gluon.jit
def fa3_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
               STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
               num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    gl.static_assert(num_warps == 4, "the default partition is consumer 0 (one warpgroup)")
    warp_specialized(consumer, producer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
                     BM, STAGES, CONSUMERS, CAUSAL, True, PROFILE)
