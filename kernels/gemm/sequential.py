"""``sequential``: load a k-step, wait for it, multiply, repeat. One stage, no overlap.

The schedule (compare ``sim/``'s ``sequential``)::

    for each k-step:
        TMA  A[off_m, k], B[k, off_n]  -> slot 0, completing on full[0]   (expect-tx bytes)
        wait full[0]                                                       (tensor cores idle)
        wgmma slot 0 (synchronous)                                         (TMA idle)
        all warps done reading slot 0 before it is refilled

Two consumer warpgroups (8 warps) share one 128 x 256 tile, each computing 64 x 256 with
m64n256k16 wgmmas: the same per-warpgroup work as ``pipelined`` and ``ws`` so the ladder
compares schedules, not tile shapes.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma

from .common import Config, b_box, b_cols, b_operand, epilogue, load_b, tile_coords, wgmma_layout

STAGES_ALLOWED = range(1, 2)


def config(stages=None, persistent=None) -> Config:
    cfg = Config(BM=128, BN=256, BK=64, stages=1 if stages is None else stages, num_warps=8,
                 persistent=False, smem_c_separate=False)
    if persistent:
        raise ValueError("sequential: persistent=True is not offered (one CTA per tile)")
    cfg.check("sequential", STAGES_ALLOWED)
    return cfg


@gluon.jit
def sequential_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                      num_warps: gl.constexpr, B_TRANSPOSED: gl.constexpr = False):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    M = a_desc.shape[0]
    K = a_desc.shape[1]
    N = b_cols(b_desc, B_TRANSPOSED)
    pid_m, pid_n = tile_coords(gl.program_id(0), gl.cdiv(M, BM), gl.cdiv(N, BN), GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN

    # One slot: A and B tiles and the mbarrier the TMA unit completes.
    a_slot = gl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    b_slot = gl.allocate_shared_memory(b_desc.dtype, b_box(BK, BN, B_TRANSPOSED), b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(full.index(0), count=1)

    acc = gl.zeros([BM, BN], gl.float32, wgmma_layout(BN, num_warps))
    phase = 0
    for k in range(0, K, BK):
        mbarrier.expect(full.index(0), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [off_m, k], full.index(0), a_slot)
        load_b(b_desc, k, off_n, full.index(0), b_slot, B_TRANSPOSED)
        mbarrier.wait(full.index(0), phase)
        phase ^= 1
        acc = warpgroup_mma(a_slot, b_operand(b_slot, B_TRANSPOSED), acc)  # synchronous: waits for its own result
        gl.thread_barrier()  # both warpgroups have read the slot before the next TMA

    mbarrier.invalidate(full.index(0))
    # The slot is dead now: the compiler places the epilogue's staging tile over it.
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    epilogue(c_desc, c_smem, acc, off_m, off_n)
    tma.store_wait(0)

