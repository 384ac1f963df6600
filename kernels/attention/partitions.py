"""How an attention kernel's warps are organised around a consumer: the CTA's shared memory, the
warp-specialized region (a producer warp and consumer warpgroups with setmaxnreg budgets, FA3
alg. 1) or a single partition that loads in-line, and the consumer's hand-back of a ring slot,
which depends on which of the two it runs in.

Every consumer (``ws.consumer``, ``overlap.consumer``) takes the same arguments, so either region
can run either loop:

    q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES, CONSUMERS, CAUSAL,
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
    WG, TURNS, REFILL, num_warps, PROFILE, FENCE, SOFTMAX

(``FENCE`` and ``SOFTMAX``: the overlapped consumer's switches, ``overlap.py`` and ``steps.py``;
``ws.consumer`` takes and ignores them.) K and V have rings of their own (as in FA3): ``K_j``'s slot frees as soon as ``Q·K_jᵀ`` is
done, while ``V_j`` is still needed for ``P·V``.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._core import builtin as _builtin
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier
from triton.language.core import _unwrap_if_constexpr

from .. import ring
from .steps import (
    NAMED_TURNS,
    ONE_RELEASE,
    load_block,
    load_q,
    num_blocks,
    produce,
    tile_position,
)

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
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [PARTS] + q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
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


@_builtin
def warp_specialize(functions_and_args, worker_num_warps, worker_num_regs, _semantic=None,
                    _generator=None):
    """``gl.warp_specialize`` for partition functions handed in as arguments: inside a jit
    function those arrive boxed as constexprs, which gl.warp_specialize does not unbox."""
    fns = [(_unwrap_if_constexpr(fn), args) for fn, args in functions_and_args]
    return gl.warp_specialize(fns, worker_num_warps, worker_num_regs, _semantic=_semantic,
                              _generator=_generator)


@gluon.jit
def warp_specialized(consumer: gl.constexpr, producer: gl.constexpr, q_desc, k_desc, v_desc,
                     o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr, STAGES: gl.constexpr,
                     CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr, TURNS: gl.constexpr,
                     PROFILE: gl.constexpr = False, FENCE: gl.constexpr = True,
                     SOFTMAX: gl.constexpr = 0):
    """The ws region: consumer 0 is the default partition (the kernel's 4 warps), consumers
    1.. are 4-warp workers with ``consumer_regs`` registers, the producer a 1-warp worker with
    ``producer_regs`` (``worker_num_regs`` -> setmaxnreg)."""
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn = allocate(
        q_desc, k_desc, v_desc, STAGES, CONSUMERS, CONSUMERS, True, TURNS, SOFTMAX)
    CR: gl.constexpr = consumer_regs(CONSUMERS)
    PR: gl.constexpr = producer_regs(CONSUMERS)
    # (the argument tuples are spelled out: a tuple built with + loses its constexprs)
    if CONSUMERS == 2:
        warp_specialize([
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 0, TURNS, 0, 4, PROFILE, FENCE, SOFTMAX)),
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 1, TURNS, 0, 4, PROFILE, FENCE, SOFTMAX)),
            (producer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, PROFILE, SOFTMAX)),
        ], [4, 1], [CR, PR])
    else:
        gl.static_assert(CONSUMERS == 3, "1 producer + 2 or 3 consumer warpgroups")
        warp_specialize([
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 0, TURNS, 0, 4, PROFILE, FENCE, SOFTMAX)),
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 1, TURNS, 0, 4, PROFILE, FENCE, SOFTMAX)),
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 2, TURNS, 0, 4, PROFILE, FENCE, SOFTMAX)),
            (producer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, PROFILE, SOFTMAX)),
        ], [4, 4, 1], [CR, CR, PR])


@gluon.jit
def producer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             PROFILE: gl.constexpr = False, SOFTMAX: gl.constexpr = 0):
    """The producer warp (FA3 alg. 1; ``sim/attention/ws.py``): ``load_q`` once, then for each
    block ``produce`` K_j and V_j (wait for a free slot, expect its bytes, TMA).

    ``ONE_RELEASE`` (``overlap.py``): the consumers' arrive at ring position i of ``k_empty``
    says K_i and V_{i-1} are read (their last wgmma reading either is waited for). K_j's slot
    held K_{j-S} (S = ``STAGES``), freed at position j - S as before; V_j's held V_{j-S}, freed
    with K_{j-S+1} at position j - S + 1 (``LAG`` 1). So each slot is still reloaded only once
    every consumer has waited for the last wgmma that read it; V_{S-1}, the V ring's first
    lap, now also waits for position 0 (K_0 read), which it did not need."""
    BN: gl.constexpr = k_desc.block_type.shape[0]
    row0, m0 = tile_position(seqlen, BM, CAUSAL)
    load_q(q_desc, q_smem, q_full, row0, m0, CONSUMERS)
    for j in range(num_blocks(m0, seqlen, BM, BN, CAUSAL)):
        produce(k_desc, k_ring, k_full, k_empty, j, row0, STAGES, PROFILE)  # wait k.empty, TMA K_j
        if SOFTMAX & ONE_RELEASE:  # wait k.empty at j + 1, TMA V_j
            produce(v_desc, v_ring, v_full, k_empty, j, row0, STAGES, PROFILE, 1)
        else:  # wait v.empty, TMA V_j
            produce(v_desc, v_ring, v_full, v_empty, j, row0, STAGES, PROFILE)


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
    consumer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES, CONSUMERS,
             CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             0, False, REFILL, num_warps, PROFILE, FENCE, SOFTMAX)


@gluon.jit
def fill_rings(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_full, k_full, v_full, row0, m0,
               n, STAGES: gl.constexpr):
    """No producer: the consumer partition loads Q and fills every ring slot before its loop."""
    load_q(q_desc, q_smem, q_full, row0, m0, 1)
    for i in gl.static_range(STAGES):
        load_block(k_desc, k_ring, k_full, i, row0, STAGES, pred=i < n)
        load_block(v_desc, v_ring, v_full, i, row0, STAGES, pred=i < n)


@gluon.jit
def release(desc, ring_smem, full, empty, j, n, row0, STAGES: gl.constexpr, REFILL: gl.constexpr):
    """Block j's slot is read: hand it to the producer (``ring.release``) or, with no producer,
    let every consumer warp get here — nobody may overwrite a slot another warp still reads —
    and refill it in-line with block ``j + STAGES``."""
    if REFILL == 0:
        ring.release(empty, j, STAGES)
    else:
        j_next = j + STAGES
        gl.thread_barrier()
        load_block(desc, ring_smem, full, j_next, row0, STAGES, pred=j_next < n)
