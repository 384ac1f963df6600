"""``ws``: warp specialization. One producer warp fills the ring; two consumer warpgroups
cooperate on one 128 x 256 output tile (CUTLASS's "cooperative" schedule).

Roles, as in ``sim/``'s ``ws`` schedule::

    producer (1 warp, few registers)         consumer (2 warpgroups, many registers)
    for each k-step `it` of my tiles:        for each tile:
        produce(ab, it):                         for each k-step `it`:
            wait_slot: wait empty[s]                 acquire(ab, it): wait full[s]
            expect full[s] <- bytes of A + B         mma: wgmma slot s (async), wgmma_wait(1)
            TMA A, B -> slot s                       release(ab, it - 1): arrive empty
                                                 wgmma_wait(0); release(ab, last)
                                                 epilogue: store the tile (TMA)

``gl.warp_specialize(..., worker_num_regs=[PRODUCER_REGS])`` makes the compiler emit
``setmaxnreg``: the producer warpgroup gives registers back (``setmaxnreg.dec``) and the consumers
take them (``setmaxnreg.inc``), so a 64 x 256 fp32 accumulator per warpgroup (128 registers per
thread) fits with room for the epilogue.

Persistent: the grid is one CTA per SM (``persistent=True``, the default) and both roles walk the
same tiles through ``tile_coords``, so the producer runs ahead into the next tile while the
consumers store the last one. ``persistent=False`` launches one CTA per tile with the same code.
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

from ..ring import acquire, release, wait_slot
from ..scopes import enter, exit
from .common import Config, epilogue, tile_coords, wgmma_layout

STAGES_ALLOWED = range(2, 5)
PRODUCER_WARPS = gl.constexpr(1)
PRODUCER_REGS = gl.constexpr(40)  # setmaxnreg.dec target for the producer's warpgroup
MAXNREG = 168  # register cap at entry: 65536 / (3 warpgroups x 128 threads), rounded down to 8


def config(stages=None, persistent=None) -> Config:
    cfg = Config(BM=128, BN=256, BK=64, stages=3 if stages is None else stages, num_warps=8,
                 persistent=True if persistent is None else persistent, maxnreg=MAXNREG)
    cfg.check("ws", STAGES_ALLOWED)
    return cfg


@gluon.jit
def produce(a_desc, b_desc, a_ring, b_ring, full, empty, it, pid_m, pid_n, k,
            STAGES: gl.constexpr, PROFILE: gl.constexpr = False):
    """Ring position ``it`` (k-step ``k`` of tile (pid_m, pid_n)): wait for its slot to be free,
    expect the bytes of A and B on ``full``, TMA them in. A is ``ROW_BLOCKS`` boxes of ``BOX_M``
    rows, one ring entry each (ws: one box of 128 rows, pingpong: 3 x 64)."""
    ROW_BLOCKS: gl.constexpr = a_ring.type.shape[0] // STAGES
    BOX_M: gl.constexpr = a_desc.block_type.shape[0]
    BM: gl.constexpr = ROW_BLOCKS * BOX_M
    BN: gl.constexpr = b_desc.block_type.shape[1]
    enter("wait slot", PROFILE)
    s = wait_slot(empty, it, STAGES)
    exit("wait slot", PROFILE)
    enter("TMA issue", PROFILE)
    mbarrier.expect(full.index(s), ROW_BLOCKS * a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    for r in gl.static_range(ROW_BLOCKS):
        tma.async_copy_global_to_shared(a_desc, [pid_m * BM + r * BOX_M, k], full.index(s),
                                        a_ring.index(s * ROW_BLOCKS + r))
    tma.async_copy_global_to_shared(b_desc, [k, pid_n * BN], full.index(s), b_ring.index(s))
    exit("TMA issue", PROFILE)


@gluon.jit
def producer(a_desc, b_desc, a_ring, b_ring, full, empty, GROUP_M: gl.constexpr,
             STAGES: gl.constexpr, PROFILE: gl.constexpr = False):
    """The producer warp: walks this CTA's tiles and their k-steps in order, one ring position
    each."""
    ROW_BLOCKS: gl.constexpr = a_ring.type.shape[0] // STAGES
    BM: gl.constexpr = ROW_BLOCKS * a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    M = a_desc.shape[0]
    K = a_desc.shape[1]
    N = b_desc.shape[1]
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    it = 0  # ring position, counted over all my tiles
    for tile_id in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        for k in range(0, K, BK):
            produce(a_desc, b_desc, a_ring, b_ring, full, empty, it, pid_m, pid_n, k, STAGES,
                    PROFILE)
            it += 1


@gluon.jit
def mma(a_slot, b_slot, acc):
    """Issue this k-step's wgmma, then wait until it is the only one in flight: the previous
    k-step has been read by both warpgroups and its slot can go back."""
    acc = warpgroup_mma(a_slot, b_slot, acc, is_async=True)
    return warpgroup_mma_wait(1, deps=(acc,))


@gluon.jit
def consumer(c_desc, a_ring, b_ring, full, empty, c_smem, K, GROUP_M: gl.constexpr,
             STAGES: gl.constexpr, num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_ring.type.shape[2]
    num_pid_m = gl.cdiv(c_desc.shape[0], BM)
    num_pid_n = gl.cdiv(c_desc.shape[1], BN)
    k_steps = gl.cdiv(K, BK)
    it = 0
    for tile_id in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([BM, BN], gl.float32, wgmma_layout(BN, num_warps))
        for ki in range(k_steps):
            enter("wait full", PROFILE)
            s = acquire(full, it, STAGES)
            exit("wait full", PROFILE)
            enter("MMA", PROFILE)  # issue k-step it, wait for k-step it-1
            acc = mma(a_ring.index(s), b_ring.index(s), acc)
            exit("MMA", PROFILE)
            # k-step it-1 (a lap on, so that the remainder of position -1 is not negative)
            release(empty, it + STAGES - 1, STAGES, pred=ki > 0)
            it += 1
        enter("epilogue", PROFILE)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        release(empty, it + STAGES - 1, STAGES)  # the last k-step
        epilogue(c_desc, c_smem, acc, pid_m * BM, pid_n * BN)
        exit("epilogue", PROFILE)
    tma.store_wait(0)


@gluon.jit
def ws_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
              num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    # The ring and its two barrier arrays, and the epilogue's staging tile.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)  # the producer's expect-tx arrive
        mbarrier.init(empty.index(slot), count=1)  # one arrive from the consumer partition
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)

    gl.warp_specialize([
        (consumer, (c_desc, a_ring, b_ring, full, empty, c_smem, a_desc.shape[1], GROUP_M, STAGES,
                    num_warps, PROFILE)),
        (producer, (a_desc, b_desc, a_ring, b_ring, full, empty, GROUP_M, STAGES, PROFILE)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])

