"""``ws_pingpong``: as ``ws``, but each consumer warpgroup owns its own 192 x 128 output tile and
the two take turns on the tensor cores (CUTLASS's "pingpong" schedule), so one's epilogue runs
under the other's wgmmas.

Roles, as in ``sim/gemm/ws_pingpong.py`` (same steps, same order)::

    producer (1 warp): the ``ws`` producer, unchanged. It walks this CTA's tiles in order;
        tile 0, 2, 4, ... belong to consumer 0 and tile 1, 3, 5, ... to consumer 1, so the ring
        is consumed in exactly the order it is filled.

    consumer WG (one warpgroup each, WG = 0 or 1), for my j-th tile:
        wait_turn(j)                        # my turn on the tensor cores: wait turn[WG]
        for each k-step `it`:
            acquire(ab, it); mma (async); wait_mma (wgmma_wait(1): k-step it-1 is done)
            release(ab, it - 1)
        pass_turn                           # all my wgmmas are issued: arrive turn[1 - WG]
        wait_mma (wgmma_wait(0)); release(ab, last)
        epilogue (convert, smem, TMA store)  # runs while the other's wgmmas keep the TCs busy

Why 192 x 128. A consumer warpgroup holds its whole accumulator in registers; 192 x 128 fp32 is
192 registers a thread, the most that fits beside its addresses in the 224-240 a consumer gets
(ptxas: no spills). The tile sets the operand traffic the tensor cores need: a 64-deep k-step of
192 x 128 reads 40 KiB for 3.1 MFLOP (79 FLOP/B), where 128 x 128 reads 32 KiB for 2.1 MFLOP
(64 FLOP/B) and the cooperative 128 x 256 tile of ``ws`` 48 KiB for 4.2 MFLOP (85 FLOP/B). At
4096 FLOP/clk, 128 x 128 asks L2 for 64 B/clk/SM, and on our H200 it got about 59 (a traced
k-step ran at 556 clk for 512 of math); 192 x 128 asks for 53, and its traced k-step runs at the
math rate (``results/traces/gemm_ws_pingpong.summary.json``). Gluon tensors are powers of
two, so the tile is three row blocks of 64: three 64 x 64 TMA boxes of A per k-step, three m64n128
accumulators, three 64 x 128 boxes stored by the epilogue through one 16 KiB staging buffer per
consumer (the epilogue has the other consumer's whole K-loop to hide in, so storing box by box
costs nothing the tensor cores see).

Gluon has no named-barrier API, so the turns are two mbarriers (count 1), ``kernels/ring.py``'s
``Turns``: turn j of warpgroup WG waits at ``turn_parity(j, WG)`` =
``(j & 1) ^ (WG == 0)``. A fresh mbarrier counts as having completed the phase before phase 0,
so consumer 0's first wait falls through and consumer 1's first wait needs consumer 0's first
hand-over; after that each hand-over completes exactly the phase the other is waiting for.

The default partition is consumer 0 (the kernel's 4 warps); consumer 1 is a 4-warp worker with
``CONSUMER_REGS`` registers and the producer a 1-warp worker with ``PRODUCER_REGS`` (setmaxnreg;
``kernels/roles.py``).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from ..ring import Turns
from ..roles import CONSUMER_WARPS, warp_specialize
from .common import Config, b_box, tile_coords
from .tile import Tile
from .ws import MAXNREG, PRODUCER_REGS, producer, ring

STAGES_ALLOWED = range(2, 5)  # 192 x 128: 4 x 40 KiB ring + 2 x 16 KiB staging = 192 KiB
CONSUMER_REGS = gl.constexpr(240)  # the worker consumer; the default one gets what is left: 224
BOX_M = 64  # rows of one row block: one wgmma M of a warpgroup, one TMA box of A and of C


def config(stages=None, persistent=None) -> Config:
    cfg = Config(BM=192, BN=128, BK=64, stages=4 if stages is None else stages, num_warps=4,
                 persistent=True if persistent is None else persistent, maxnreg=MAXNREG,
                 c_tiles=2, box_m=BOX_M)
    cfg.check("ws_pingpong", STAGES_ALLOWED)
    return cfg


@gluon.jit
def consumer(t, ab, turns, c_smem, K, GROUP_M: gl.constexpr):
    """Consumer warpgroup ``turns.WG``: its tiles, this CTA's ``2j + WG``-th, each K-loop on
    its turn (``sim/gemm/ws_pingpong.py``'s ``consumer``, step for step)."""
    BM: gl.constexpr = t.ROW_BLOCKS * t.c_desc.block_type.shape[0]
    BN: gl.constexpr = t.c_desc.block_type.shape[1]
    BK: gl.constexpr = t.a.type.shape[2]
    num_pid_m = gl.cdiv(t.c_desc.shape[0], BM)
    num_pid_n = gl.cdiv(t.c_desc.shape[1], BN)
    k_steps = gl.cdiv(K, BK)
    nprog = gl.num_programs(0)
    j = 0  # my tiles so far; this CTA's tile 2j + WG
    for tile_id in range(gl.program_id(0) + turns.WG * nprog, num_pid_m * num_pid_n, 2 * nprog):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        it = (2 * j + turns.WG) * k_steps  # ring position of my first k-step of this tile
        turns.wait_turn(j)                                 # my turn on the tensor cores
        accs = t.zero()
        for ki in range(k_steps):
            s = ab.acquire(it)
            accs = t.mma(ab, s, accs)
            accs = t.wait_mma(accs, 1)                     # k-step it-1 is done
            ab.release(it - 1, pred=ki > 0)
            it += 1
        turns.pass_turn()                                  # all my wgmmas are issued: your turn
        accs = t.wait_mma(accs, 0)
        ab.release(it - 1)
        t.epilogue(accs, c_smem.index(turns.WG), pid_m, pid_n)  # under the other's K-loop
        j += 1  # noqa: SIM113 (a device loop: no enumerate)
    tma.store_wait(0)


@gluon.jit
def pingpong(c_desc, a_ring, b_ring, full, empty, turn, c_smem, K, GROUP_M: gl.constexpr,
             ROW_BLOCKS: gl.constexpr, PROFILE: gl.constexpr, B_TRANSPOSED: gl.constexpr,
             WG: gl.constexpr):
    """Consumer partition ``WG``: its ``Tile`` (``ROW_BLOCKS`` boxes of 64 rows), the ring, its
    ``Turns``, the staging buffers (its own is ``c_smem.index(WG)``)."""
    consumer(Tile(a_ring, c_desc, ROW_BLOCKS, CONSUMER_WARPS, PROFILE, B_TRANSPOSED),
             ring(b_ring, full, empty, PROFILE), Turns(turn, WG, 2, False, PROFILE), c_smem, K,
             GROUP_M)


@gluon.jit
def ws_pingpong_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                       ROW_BLOCKS: gl.constexpr, num_warps: gl.constexpr,
                       PROFILE: gl.constexpr = False, B_TRANSPOSED: gl.constexpr = False):
    BOX_M: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    gl.static_assert(num_warps == CONSUMER_WARPS)  # the default partition is consumer 0
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES * ROW_BLOCKS, BOX_M, BK],
                                       a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_box(BK, BN, B_TRANSPOSED),
                                       b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)
        mbarrier.init(empty.index(slot), count=1)
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for wg in gl.static_range(2):
        mbarrier.init(turn.index(wg), count=1)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [2, BOX_M, BN], c_desc.layout)

    warp_specialize(
        pingpong, (c_desc, a_ring, b_ring, full, empty, turn, c_smem, a_desc.shape[1], GROUP_M,
                   ROW_BLOCKS, PROFILE, B_TRANSPOSED),
        producer, (a_desc, b_desc, a_ring, b_ring, full, empty, GROUP_M, PROFILE, B_TRANSPOSED),
        2, CONSUMER_REGS, PRODUCER_REGS)
