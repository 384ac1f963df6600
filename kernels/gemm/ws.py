"""``ws``: warp specialization. One producer warp fills the ring; two consumer warpgroups
cooperate on one 128 x 256 output tile (CUTLASS's "cooperative" schedule).

Roles, as in ``sim/gemm/ws.py`` (same steps, same order)::

    producer (1 warp, few registers)         consumer (2 warpgroups, many registers)
    for each tile, each k-step `it`:         for each tile:
        produce(ab, it):                         for each k-step `it`:
            wait_slot: wait empty[s]                 acquire(ab, it): wait full[s]
            expect full[s] <- bytes of A + B         mma: wgmma slot s (async)
            TMA A, B -> slot s                       wait_mma: wgmma_wait(1), k-step it-1 done
                                                     release(ab, it - 1): arrive empty
                                                 wait_mma: wgmma_wait(0); release(ab, last)
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
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from ..ring import Ring
from ..roles import PRODUCER_WARPS
from .common import Config, b_box, b_cols, box_n, tile_coords
from .tile import Tile, produce

STAGES_ALLOWED = range(2, 5)
PRODUCER_REGS = gl.constexpr(40)  # setmaxnreg.dec target for the producer's warpgroup
MAXNREG = 168  # register cap at entry: 65536 / (3 warpgroups x 128 threads), rounded down to 8


def config(stages=None, persistent=None) -> Config:
    cfg = Config(BM=128, BN=256, BK=64, stages=3 if stages is None else stages, num_warps=8,
                 persistent=True if persistent is None else persistent, maxnreg=MAXNREG)
    cfg.check("ws", STAGES_ALLOWED)
    return cfg


@gluon.jit
def ring(b_ring, full, empty, PROFILE: gl.constexpr):
    """The (A, B) ring as both roles see it: B's slots and the barriers the two operands share
    (``kernels/gemm/tile.py``); released one k-step late, from the position before the first."""
    return Ring(b_ring, full, empty, 0, "wait full", PROFILE, True)


@gluon.jit
def producer(a_desc, b_desc, a_ring, b_ring, full, empty, GROUP_M: gl.constexpr,
             PROFILE: gl.constexpr = False, B_TRANSPOSED: gl.constexpr = False):
    """The producer warp (``sim/gemm/ws.py``'s ``producer``): this CTA's tiles and their
    k-steps in order, one ring position each."""
    ab = ring(b_ring, full, empty, PROFILE)
    ROW_BLOCKS: gl.constexpr = a_ring.type.shape[0] // ab.STAGES
    BM: gl.constexpr = ROW_BLOCKS * a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = box_n(b_desc, B_TRANSPOSED)
    M = a_desc.shape[0]
    K = a_desc.shape[1]
    N = b_cols(b_desc, B_TRANSPOSED)
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    it = 0  # ring position, counted over all my tiles
    for tile_id in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        for k in range(0, K, BK):                          # the k-step at column k of A
            produce(a_desc, b_desc, a_ring, ab, it, pid_m, pid_n, k, PROFILE, B_TRANSPOSED)
            it += 1


@gluon.jit
def consumer(t, ab, c_smem, K, GROUP_M: gl.constexpr):
    """The two consumer warpgroups, one partition of 8 warps: each k-step of each of this
    CTA's tiles (``sim/gemm/ws.py``'s ``consumer``, step for step)."""
    BM: gl.constexpr = t.ROW_BLOCKS * t.c_desc.block_type.shape[0]
    BN: gl.constexpr = t.c_desc.block_type.shape[1]
    BK: gl.constexpr = t.a.type.shape[2]
    num_pid_m = gl.cdiv(t.c_desc.shape[0], BM)
    num_pid_n = gl.cdiv(t.c_desc.shape[1], BN)
    k_steps = gl.cdiv(K, BK)
    it = 0
    for tile_id in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        accs = t.zero()
        for ki in range(k_steps):
            s = ab.acquire(it)                             # A, B of k-step it landed
            accs = t.mma(ab, s, accs)                      # wgmma (async)
            accs = t.wait_mma(accs, 1)                     # k-step it-1 is done
            ab.release(it - 1, pred=ki > 0)                # its slot back to the producer
            it += 1
        accs = t.wait_mma(accs, 0)                         # the last k-step
        ab.release(it - 1)
        t.epilogue(accs, c_smem, pid_m, pid_n)
    tma.store_wait(0)


@gluon.jit
def cooperative(c_desc, a_ring, b_ring, full, empty, c_smem, K, GROUP_M: gl.constexpr,
                num_warps: gl.constexpr, PROFILE: gl.constexpr = False,
                B_TRANSPOSED: gl.constexpr = False):
    """The consumer partition: its ``Tile`` (one box of 128 rows, 8 warps) and the ring."""
    consumer(Tile(a_ring, c_desc, 1, num_warps, PROFILE, B_TRANSPOSED),
             ring(b_ring, full, empty, PROFILE), c_smem, K, GROUP_M)


@gluon.jit
def ws_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
              num_warps: gl.constexpr, PROFILE: gl.constexpr = False,
              B_TRANSPOSED: gl.constexpr = False):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    # The ring and its two barrier arrays, and the epilogue's staging tile.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_box(BK, BN, B_TRANSPOSED),
                                       b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)  # the producer's expect-tx arrive
        mbarrier.init(empty.index(slot), count=1)  # one arrive from the consumer partition
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)

    gl.warp_specialize([
        (cooperative, (c_desc, a_ring, b_ring, full, empty, c_smem, a_desc.shape[1], GROUP_M,
                       num_warps, PROFILE, B_TRANSPOSED)),
        (producer, (a_desc, b_desc, a_ring, b_ring, full, empty, GROUP_M, PROFILE, B_TRANSPOSED)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])
