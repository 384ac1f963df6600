"""``sequential`` — load a block, wait for it, compute, repeat: one slot per ring, refilled only
once the whole block (K and V) is done (``sim/attention/sequential.py``).

No role split: the consumer warpgroups are one partition (the kernel's warps) and issue the TMA
themselves. With one slot the next block's loads can only start after every warp has finished
P·V of this one, so each block pays the full TMA latency with the tensor cores idle::

    prologue: TMA Q, K_0, V_0
    for each block j:
        acquire(k, j); qk: S = Q K_jᵀ; softmax; rescale O
        acquire(v, j); pack P; pv: O += P V_j
        release(k, j): bar.sync (every warp is done with the slots); TMA K_{j+1}, V_{j+1}
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .partitions import REFILL_BLOCK, single_partition
from .ws import consumer

STAGES = 1  # the variant *is* the one-slot ring


@gluon.jit
def sequential_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
                      STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
                      num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    gl.static_assert(STAGES == 1, "sequential is the one-slot ring")
    single_partition(consumer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM,
                     STAGES, CONSUMERS, CAUSAL, REFILL_BLOCK, num_warps, PROFILE)
