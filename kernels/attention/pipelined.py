"""``pipelined`` — s-stage K and V rings, but no producer: the compute warps issue the TMA
themselves (``sim/attention/pipelined.py``).

The prologue fills every slot. Each time the warps are done with a slot — K_j after Q·K_jᵀ, V_j
after P·V_j — they meet at a CTA barrier (nobody may overwrite a slot another warp still reads)
and one thread refills it with the block ``STAGES`` ahead. Loads overlap compute, but the barrier
ties the consumer warpgroups together: they reach the tensor cores at the same moments and their
softmaxes collide::

    prologue: TMA Q, K_0..K_{s-1}, V_0..V_{s-1}
    for each block j:
        acquire(k, j); qk: S = Q K_jᵀ;     release(k, j): bar.sync; TMA K_{j+s} -> slot s
        softmax; rescale O
        acquire(v, j); pack P; pv: O += P V_j;  release(v, j): bar.sync; TMA V_{j+s} -> slot s
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .partitions import REFILL_EACH, single_partition
from .ws import consumer


@gluon.jit
def pipelined_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
                     STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
                     num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    single_partition(consumer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM,
                     STAGES, CONSUMERS, CAUSAL, REFILL_EACH, num_warps, PROFILE)
