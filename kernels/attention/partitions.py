"""How an attention kernel's warps are organised around a consumer: the CTA's shared memory, the
warp-specialized region (a producer warp and consumer warpgroups with setmaxnreg budgets, FA3
alg. 1) or a single partition that loads in-line, and the consumer's hand-back of a ring slot,
which depends on which of the two it runs in.

Every schedule's consumer (``ws.consumer``, ``overlap.consumer``) takes the same four aggregates,
so either region can run either loop: its ``Tile`` (``tile.py``), the K and V rings and its
``Turns`` (``kernels/ring.py``). ``consumer`` builds them from the region's arguments, and the
switches are decided there, once: which ring hands a slot back (a producer's ``Ring``, or
``InlineRing``, which refills it in-line), and where (``one_release``: V's slots through K's
``empty``). K and V have rings of their own (as in FA3): ``K_j``'s slot frees as soon as
``Q·K_jᵀ`` is done, while ``V_j`` is still needed for ``P·V``.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.language.core import _aggregate as aggregate

from ..ring import Ring, Turns
from ..roles import warp_specialize
from . import boxes
from .steps import (
    NAMED_TURNS,
    ONE_RELEASE,
    load_block,
    load_q,
    num_blocks,
    q_rows,
    tile_position,
)
from .tile import Tile

NO_REFILL = gl.constexpr(0)  # a producer warp loads (ws, ws_pingpong, fa3)
REFILL_EACH = gl.constexpr(1)  # in-line: refill each slot once its GEMM is done (pipelined, overlap)
REFILL_BLOCK = gl.constexpr(2)  # in-line: load block j+1 once block j is done (sequential)


@gluon.jit
def allocate(q_desc, k_desc, v_desc, STAGES: gl.constexpr, PARTS: gl.constexpr,
             CONSUMERS: gl.constexpr, WS: gl.constexpr, TURNS: gl.constexpr,
             SOFTMAX: gl.constexpr = 0):
    """Q (``PARTS`` boxes), the K and V rings with their ``full`` mbarriers, and where a producer
    refills the rings their ``empty`` mbarriers (one arrive per consumer warpgroup; with
    ``ONE_RELEASE`` only ``k_empty``, which then frees both rings); ``turn`` mbarriers (count 1)
    where consumers take turns on the tensor cores (not with ``NAMED_TURNS``: named barriers)."""
    q_smem = boxes.allocate(q_desc, PARTS)
    k_ring = boxes.allocate(k_desc, STAGES)
    v_ring = boxes.allocate(v_desc, STAGES)
    q_full = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_full, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_full.index(s), count=1)  # the expect-tx arrive
        mbarrier.init(v_full.index(s), count=1)
        if WS:
            mbarrier.init(k_empty.index(s), count=CONSUMERS)  # one arrive per consumer
            if not (SOFTMAX & ONE_RELEASE):
                mbarrier.init(v_empty.index(s), count=CONSUMERS)
    if TURNS and not (SOFTMAX & NAMED_TURNS):
        for w in gl.static_range(CONSUMERS):
            mbarrier.init(turn.index(w), count=1)
    fence_async_shared()  # the initialised barriers are visible to the TMA unit (async proxy)
    return q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn


@gluon.constexpr_function
def consumer_regs(consumers):
    """setmaxnreg of a consumer warpgroup: FA3's 240 with 2 consumers, 160 with 3."""
    return 240 if consumers == 2 else 160


@gluon.constexpr_function
def producer_regs(consumers):
    return 24 if consumers == 2 else 32


@gluon.jit
def warp_specialized(consumer: gl.constexpr, producer: gl.constexpr, q_desc, k_desc, v_desc,
                     o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr, STAGES: gl.constexpr,
                     CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr, TURNS: gl.constexpr,
                     PROFILE: gl.constexpr = False, FENCE: gl.constexpr = True,
                     SOFTMAX: gl.constexpr = 0):
    """The ws region (``kernels/roles.py``): consumer 0 is the default partition (the kernel's 4
    warps), consumers 1.. are 4-warp workers with ``consumer_regs`` registers, the producer a
    1-warp worker with ``producer_regs`` (``worker_num_regs`` -> setmaxnreg)."""
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn = allocate(
        q_desc, k_desc, v_desc, STAGES, CONSUMERS, CONSUMERS, True, TURNS, SOFTMAX)
    gl.static_assert(CONSUMERS == 2 or CONSUMERS == 3, "1 producer + 2 or 3 consumer warpgroups")
    warp_specialize(
        partition, (consumer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                    CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty,
                    v_empty, turn, TURNS, 0, 4, PROFILE, FENCE, SOFTMAX),
        producer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES, CONSUMERS,
                   CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
                   PROFILE, SOFTMAX),
        CONSUMERS, consumer_regs(CONSUMERS), producer_regs(CONSUMERS))


@gluon.jit
def single_partition(consumer: gl.constexpr, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen,
                     qk_scale, BM: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr,
                     CAUSAL: gl.constexpr, REFILL: gl.constexpr, num_warps: gl.constexpr,
                     PROFILE: gl.constexpr = False, FENCE: gl.constexpr = True,
                     SOFTMAX: gl.constexpr = 0):
    """No role split: all consumer warpgroups are one partition (the kernel's warps) and issue
    the TMA in-line (``REFILL``: 1 = each ring slot as soon as its GEMM is done, 2 = the next
    block only after the whole block is done)."""
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn = allocate(
        q_desc, k_desc, v_desc, STAGES, 1, CONSUMERS, False, False)
    partition(consumer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
              CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty,
              turn, False, REFILL, num_warps, PROFILE, FENCE, SOFTMAX, 0)


@gluon.jit
def fill_rings(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_full, k_full, v_full, row0, m0,
               n, STAGES: gl.constexpr):
    """No producer: the consumer partition loads Q and fills every ring slot before its loop."""
    load_q(q_desc, q_smem, q_full, row0, m0, 1)
    for i in gl.static_range(STAGES):
        load_block(k_desc, k_ring, k_full, i, row0, STAGES, pred=i < n)
        load_block(v_desc, v_ring, v_full, i, row0, STAGES, pred=i < n)




@aggregate
class InlineRing:
    """A ring with no producer: the consumer warps refill a slot themselves once it is read.
    ``release(j)``: every warp gets here (``SYNC``; nobody may overwrite a slot another warp
    still reads), then block ``j + STAGES`` is loaded into it; without ``SYNC`` the caller has
    just passed that barrier (``sequential``: V's slot, right after K's)."""
    ring: Ring
    slots: gl.shared_memory_descriptor  # the ring's (the steps that read a slot index these)
    desc: tma.tensor_descriptor
    row0: gl.tensor
    n: gl.tensor
    SYNC: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, ring, desc, row0, n, SYNC=True):
        self.ring = ring
        self.slots = ring.slots
        self.desc = desc
        self.row0 = row0
        self.n = n
        self.SYNC = gl.constexpr(SYNC)

    @gluon.jit
    def acquire(self, it):
        return self.ring.acquire(it)

    @gluon.jit
    def release(self, j):
        STAGES: gl.constexpr = self.ring.STAGES
        j_next = j + STAGES
        if self.SYNC:
            gl.thread_barrier()
        load_block(self.desc, self.ring.slots, self.ring.full, j_next, self.row0, STAGES,
                   pred=j_next < self.n)


@aggregate
class PieceRing:
    """A ring whose block is two pieces (``boxes.py``: 80 rows as 64 + 16): ``ring``, the first
    piece's slots with the barriers, is what waits and arrives; ``slots`` are both pieces'. A
    position's two boxes land on one ``full`` mbarrier (expecting both) and go back together."""
    ring: Ring
    slots: gl.tuple
    full: gl.shared_memory_descriptor
    STAGES: gl.constexpr
    PROFILE: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, ring, slots):
        self.ring = ring
        self.slots = slots
        self.full = ring.full
        self.STAGES = ring.STAGES
        self.PROFILE = ring.PROFILE

    @gluon.jit
    def acquire(self, it):
        return self.ring.acquire(it)

    @gluon.jit
    def release(self, it, pred=True):
        self.ring.release(it, pred)

    @gluon.jit
    def wait_slot(self, it):
        return self.ring.wait_slot(it)


@gluon.jit
def make_ring(slots, full, empty, LAG: gl.constexpr, WAIT: gl.constexpr, PROFILE: gl.constexpr):
    """A ``Ring`` over ``slots``, or a ``PieceRing`` where a block is in pieces."""
    if boxes.in_pieces(slots):
        return PieceRing(Ring(slots[0], full, empty, LAG, WAIT, PROFILE), slots)
    else:
        return Ring(slots, full, empty, LAG, WAIT, PROFILE)


@gluon.jit
def rings(k_ring, v_ring, k_full, v_full, k_empty, v_empty, SOFTMAX: gl.constexpr,
          PROFILE: gl.constexpr):
    """The K and V rings a producer refills. ``one_release``: V's slots go back through K's
    ``empty``, one position later (the arrive at position j frees K_j and V_{j-1}, ``overlap.py``)."""
    k = make_ring(k_ring, k_full, k_empty, 0, "wait K", PROFILE)
    if SOFTMAX & ONE_RELEASE:
        v = make_ring(v_ring, v_full, k_empty, 1, "wait V", PROFILE)
    else:
        v = make_ring(v_ring, v_full, v_empty, 0, "wait V", PROFILE)
    return k, v


@gluon.jit
def partition(consumer: gl.constexpr, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
              BM: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr,
              CAUSAL: gl.constexpr, q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty,
              v_empty, turn, TURNS: gl.constexpr, REFILL: gl.constexpr, num_warps: gl.constexpr,
              PROFILE: gl.constexpr, FENCE: gl.constexpr, SOFTMAX: gl.constexpr,
              WG: gl.constexpr):
    """Consumer warpgroup ``WG``: its ``Tile``, the rings as this region refills them
    (``REFILL``: 0 a producer, 1 each slot in-line once read, 2 the next block in-line once the
    whole block is done), its ``Turns``; then the schedule's ``consumer``."""
    M: gl.constexpr = q_smem.type.shape[1]  # my rows: 64 (ws) or the whole tile (in-line)
    BN: gl.constexpr = boxes.box_rows(k_desc)
    row0, m0_cta = tile_position(seqlen, BM, CAUSAL)
    n = num_blocks(m0_cta, seqlen, BM, BN, CAUSAL)
    m0 = m0_cta + WG * M
    if REFILL == 0:
        k, v = rings(k_ring, v_ring, k_full, v_full, k_empty, v_empty, SOFTMAX, PROFILE)
    else:  # no producer: the prologue fills every slot
        fill_rings(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_full, k_full, v_full, row0,
                   m0_cta, n, STAGES)
        k = InlineRing(Ring(k_ring, k_full, k_empty, 0, "wait K", PROFILE), k_desc, row0, n)
        v = InlineRing(Ring(v_ring, v_full, v_empty, 0, "wait V", PROFILE), v_desc, row0, n,
                       REFILL != 2)
    rows = q_rows(m0, M, BN, num_warps)
    q = q_smem.index(WG)
    t = Tile(q, q, q_full, row0, m0, n, rows, gl.to_tensor(seqlen), qk_scale, o_ptr, lse_ptr, BN,
             CAUSAL, num_warps, PROFILE, SOFTMAX, FENCE, TURNS)  # (S = 1 arrives as a constexpr)
    consumer(t, k, v, Turns(turn, WG, CONSUMERS, SOFTMAX & NAMED_TURNS, PROFILE))
