"""``pipelined``: an s-stage TMA ring, filled by the same warps that run the wgmmas.

No role split: the compute warps issue the TMA for k-step ``i + STAGES - 1`` right after the
wgmma of k-step ``i - 1`` has drained, so ``STAGES - 1`` loads are always in flight under the
tensor-core work. One ``full`` mbarrier per slot; no ``empty`` barrier is needed because the
warps that free a slot are the ones that refill it (a thread barrier orders the two)::

    prologue: TMA k-steps 0 .. STAGES-2 into slots 0 .. STAGES-2
    for i in k-steps:
        acquire(ab, i): wait full[i % STAGES]
        wgmma slot i % STAGES (async)            # tensor cores busy
        wgmma_wait(1)                            # k-step i-1 done: its slot is free
        TMA k-step i+STAGES-1 -> that slot       # the copy engine busy under wgmma i

Same 128 x 256 tile over two consumer warpgroups as ``sequential`` and ``ws``.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from ..ring import acquire
from .common import Config, epilogue, tile_coords, wgmma_layout

STAGES_ALLOWED = range(2, 5)


def config(stages=None, persistent=None) -> Config:
    if persistent:
        raise ValueError("pipelined: persistent=True is not offered (one CTA per tile)")
    cfg = Config(BM=128, BN=256, BK=64, stages=3 if stages is None else stages, num_warps=8,
                 persistent=False, smem_c_separate=False)
    cfg.check("pipelined", STAGES_ALLOWED)
    return cfg


@gluon.jit
def issue_load(a_desc, b_desc, a_ring, b_ring, full, i, off_m, off_n, pred,
               BK: gl.constexpr, STAGES: gl.constexpr):
    """TMA k-step ``i`` into slot ``i % STAGES``; the copy completes on ``full[slot]``."""
    s = i % STAGES
    mbarrier.expect(full.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(a_desc, [off_m, i * BK], full.index(s), a_ring.index(s), pred=pred)
    tma.async_copy_global_to_shared(b_desc, [i * BK, off_n], full.index(s), b_ring.index(s), pred=pred)


@gluon.jit
def pipelined_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                     num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    M = a_desc.shape[0]
    K = a_desc.shape[1]
    N = b_desc.shape[1]
    pid_m, pid_n = tile_coords(gl.program_id(0), gl.cdiv(M, BM), gl.cdiv(N, BN), GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    k_steps = gl.cdiv(K, BK)

    # The ring: STAGES slots of (A, B) and one `full` mbarrier per slot.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)

    # Prologue: STAGES-1 loads in flight before the first wgmma.
    for i in gl.static_range(STAGES - 1):
        issue_load(a_desc, b_desc, a_ring, b_ring, full, i, off_m, off_n, i < k_steps, BK, STAGES)

    acc = gl.zeros([BM, BN], gl.float32, wgmma_layout(BN, num_warps))
    for i in range(k_steps):
        s = acquire(full, i, STAGES)
        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s), acc, is_async=True)
        # At most one wgmma in flight: k-step i-1 has finished reading slot (i-1) % STAGES.
        acc = warpgroup_mma_wait(1, deps=(acc,))
        gl.thread_barrier()  # ... in both warpgroups, before one thread refills that slot
        j = i + STAGES - 1
        issue_load(a_desc, b_desc, a_ring, b_ring, full, j, off_m, off_n, j < k_steps, BK, STAGES)
    acc = warpgroup_mma_wait(0, deps=(acc,))

    for slot in gl.static_range(STAGES):
        mbarrier.invalidate(full.index(slot))
    # The ring is dead now: the compiler places the epilogue's staging tile over it.
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    epilogue(c_desc, c_smem, acc, off_m, off_n)
    tma.store_wait(0)

