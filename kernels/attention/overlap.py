"""``overlap`` — intra-warpgroup GEMM/softmax overlap (FA3 alg. 2), no role split
(``sim/attention/overlap.py``).

Each warpgroup issues Q·K_jᵀ and P_{j-1}·V_{j-1} back to back as async wgmmas, waits only for the
scores (``warpgroup_mma_wait(1)``: the older group, Q·K_jᵀ, is done; P·V may still run), and runs
softmax j while P_{j-1}·V_{j-1} is still on the tensor cores; then ``warpgroup_mma_wait(0)`` and
the rescale of O, which needs that P·V landed. The price is registers: S_j and P_{j-1} are live
at once. With no producer, the consumer warps refill the rings in-line as in ``pipelined``.

The same loop, with a producer and turns (``TURNS``: ``wait_turn`` before issuing the two GEMMs,
``pass_turn`` once both are queued), is the ``fa3`` consumer::

    acquire(k, 0); [wait_turn]; qk: S_0 = Q K_0ᵀ; [pass_turn]; release(k, 0); softmax 0; pack
    for j in 1 .. n-1:
        acquire(k, j); acquire(v, j-1); [wait_turn]
        qk: S_j = Q K_jᵀ (async); pv: O += P_{j-1} V_{j-1} (async); [pass_turn]
        wgmma_wait(1) -> S_j;  release(k, j);  softmax j          # under P_{j-1} V_{j-1}
        wgmma_wait(0) -> O;    release(v, j-1);  rescale O; pack P_j
    acquire(v, n-1); [wait_turn]; pv: O += P_{n-1} V_{n-1}; [pass_turn]; release(v, n-1)
    epilogue

``FENCE`` (a constexpr of ``overlap_kernel`` and ``fa3_kernel``; the launcher's ``fence=``) says
where the wait for P_{j-1}·V_{j-1} ends up:

* ``True`` (the default): after the softmax, held there by ``steps.schedule_fence``;
* ``False``: after the softmax in the source only: ptxas hoists it above the softmax (to pack
  P_j into the registers P_{j-1}·V_{j-1} is still reading), which then no longer runs under its
  own P·V; the A/B of the two builds is ``instruments/tools/ab_fence.py``;
* ``HOISTED``: written right after the scores' wait, where ptxas puts it without the fence, in a
  form Proton's records cannot move back: its ``PV`` scope is then the time a warpgroup waits for
  its own P·V once its scores are in (``python -m instruments.trace --fence hoisted``).

``SOFTMAX & RESCALE_EARLY`` moves the rescale of O from after ``wgmma_wait(0)`` (where its FMULs
stand between P_{j-1}·V_{j-1} landing and the next issue) to between the two issues, as FA3 does
above d 128 (``RescaleOBeforeGemm``): O *= alpha_{j-1} runs while Q·K_jᵀ is on the tensor cores,
and P_{j-1}·V_{j-1} then accumulates onto the rescaled O — the same products in the same order::

        qk: S_j = Q K_jᵀ (async); rescale O (alpha_{j-1}); pv: O += P_{j-1} V_{j-1} (async)
        ...
        wgmma_wait(0) -> O;    release(v, j-1);  pack P_j

Two more switches take barriers out of fa3's loop. Triton 3.6's membar pass
puts a ``bar.sync`` of the warpgroup before an mbarrier arrive that follows another arrive or
wait (it counts an arrive as touching all of shared memory: ``lib/Analysis/Membar.cpp``), so
the loop's three arrives — ``pass_turn``, ``release(k, j)``, ``release(v, j-1)`` — cost a
``bar.sync`` each, and the next block's first wait a fourth.

* ``SOFTMAX & ONE_RELEASE`` (``JOINT``): no ``release(k, j)`` after the scores' wait; the arrive
  after P_{j-1}·V_{j-1}'s wait, at ring position j of ``k_empty``, frees K_j's slot and V_{j-1}'s
  at once (the producer waits for it as both: ``partitions.producer``). Block 0's release frees
  K_0 alone, the last one V_{n-1} alone. Safe: when that arrive is made this warpgroup has
  waited for every wgmma it issued (``warpgroup_mma_wait(0)``), the two that read K_j and
  V_{j-1} included, and the producer reloads neither slot before every consumer has arrived.
  The price: K_j's slot goes back a softmax later than before.
* ``SOFTMAX & NAMED_TURNS`` (``NAMED``): ``wait_turn``/``pass_turn`` on named barriers
  (``bar.sync``/``bar.arrive``, ``kernels/ring.py``), no mbarrier, so no ``bar.sync`` before
  the hand-over and no turn mbarrier wait.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma_wait

from ..ring import acquire, pass_turn, wait_turn
from ..scopes import enter, exit
from .partitions import REFILL_EACH, fill_rings, release, single_partition
from .steps import (
    NAMED_TURNS,
    NO_TURNS,
    ONE_RELEASE,
    RESCALE_EARLY,
    epilogue,
    hold,
    init_state,
    num_blocks,
    pack,
    pv,
    q_rows,
    qk,
    rescale,
    schedule_fence,
    softmax,
    tile_position,
)

HOISTED = gl.constexpr("hoisted")  # FENCE: the wait for P·V written before the softmax


@gluon.jit
def v_release(k_empty, v_empty, j, JOINT: gl.constexpr):
    """Where V_j's slot goes back: ring position j of ``v_empty``, or (``JOINT``) position j + 1
    of ``k_empty``, the one arrive that also frees K_{j+1}."""
    if JOINT:
        return k_empty, j + 1
    else:
        return v_empty, j


@gluon.jit
def wait_pv(o_tok, v_desc, v_ring, v_full, v_empty, k_empty, j, n, row0, STAGES: gl.constexpr,
            REFILL: gl.constexpr, PROFILE: gl.constexpr, JOINT: gl.constexpr):
    """P_{j}·V_{j} done: O is in, and V_j's slot goes back (``JOINT``: K_{j+1}'s with it)."""
    enter("PV", PROFILE)
    acc = warpgroup_mma_wait(0, deps=(o_tok,))
    exit("PV", PROFILE)
    empty, at = v_release(k_empty, v_empty, j, JOINT)
    release(v_desc, v_ring, v_full, empty, at, n, row0, STAGES, REFILL)
    return acc


@gluon.jit
def consumer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             WG: gl.constexpr, TURNS: gl.constexpr, REFILL: gl.constexpr,
             num_warps: gl.constexpr, PROFILE: gl.constexpr = False, FENCE: gl.constexpr = True,
             SOFTMAX: gl.constexpr = 0):
    gl.static_assert(REFILL != 2, "overlap refills each slot as soon as its GEMM is done")
    EARLY: gl.constexpr = SOFTMAX & RESCALE_EARLY
    JOINT: gl.constexpr = SOFTMAX & ONE_RELEASE
    NAMED: gl.constexpr = SOFTMAX & NAMED_TURNS
    gl.static_assert(REFILL == 0 or not (JOINT or NAMED), "one_release, named_turns: fa3 only")
    M: gl.constexpr = q_smem.type.shape[1]
    D: gl.constexpr = q_smem.type.shape[2]
    BN: gl.constexpr = k_ring.type.shape[1]
    dtype: gl.constexpr = q_smem.dtype
    row0, m0_cta = tile_position(seqlen, BM, CAUSAL)
    n = num_blocks(m0_cta, seqlen, BM, BN, CAUSAL)
    m0 = m0_cta + WG * M
    if REFILL != 0:  # no producer: the prologue
        fill_rings(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_full, k_full, v_full, row0,
                   m0_cta, n, STAGES)
    rows = q_rows(m0, M, BN, num_warps)
    m_i, l_i, acc = init_state(M, D, BN, num_warps, SOFTMAX)
    q = q_smem.index(WG)
    enter("wait Q", PROFILE)  # the CTA's prologue: its Q tile, a cold read
    mbarrier.wait(q_full, 0)
    exit("wait Q", PROFILE)

    # block 0: the scores alone (nothing to overlap them with yet)
    ks = acquire(k_full, 0, STAGES)
    if TURNS:
        wait_turn(turn, 0, WG, NAMED, FIRST=True)
    s = qk(q, k_ring.index(ks), num_warps)
    if TURNS:
        pass_turn(turn, WG, CONSUMERS, NAMED)
    release(k_desc, k_ring, k_full, k_empty, 0, n, row0, STAGES, REFILL)
    p, alpha, m_i, l_i = softmax(s, m_i, l_i, 0, m0, rows, seqlen, qk_scale, BN, CAUSAL,
                                  SOFTMAX)
    p = pack(p, dtype, D, num_warps)

    # Scopes (PROFILE): "QK" runs from issuing both GEMMs to the scores being in, "PV" is what
    # is left of P_{j-1}·V_{j-1} once the softmax is done (often nothing), "softmax" holds the
    # rescale of O (``EARLY``: "QK" holds it) and the fp16 pack of P too (FMA-pipe work of the
    # same warps).
    for j in range(1, n):
        enter("wait K", PROFILE)
        ks = acquire(k_full, j, STAGES)
        exit("wait K", PROFILE)
        enter("wait V", PROFILE)
        vs = acquire(v_full, j - 1, STAGES)
        exit("wait V", PROFILE)
        if TURNS:
            enter("wait turn", PROFILE)
            wait_turn(turn, j, WG, NAMED)
            exit("wait turn", PROFILE)
        enter("QK", PROFILE)
        s_tok = qk(q, k_ring.index(ks), num_warps, is_async=True)  # S_j = Q K_jᵀ
        if EARLY:  # alpha_{j-1}; held below the issue, or LLVM and ptxas move it back up
            acc = rescale(acc, hold(alpha, lse_ptr, seqlen))
        o_tok = pv(p, v_ring.index(vs), acc, is_async=True)  # O += P_{j-1} V_{j-1}
        if TURNS:
            pass_turn(turn, WG, CONSUMERS, NAMED)  # both queued: the next WG's turn
        s = warpgroup_mma_wait(1, deps=(s_tok,))  # the scores only
        exit("QK", PROFILE)
        if FENCE == HOISTED:
            acc = wait_pv(o_tok, v_desc, v_ring, v_full, v_empty, k_empty, j - 1, n, row0,
                          STAGES, REFILL, PROFILE, JOINT)
        if not JOINT:  # (JOINT: K_j's slot goes back with V_{j-1}'s, in wait_pv)
            release(k_desc, k_ring, k_full, k_empty, j, n, row0, STAGES, REFILL)
        enter("softmax", PROFILE)
        p, alpha, m_i, l_i = softmax(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN, CAUSAL,
                                      SOFTMAX)
        exit("softmax", PROFILE)
        if FENCE != HOISTED:
            if FENCE:
                schedule_fence(lse_ptr, seqlen)  # or ptxas hoists the wait above the softmax
            acc = wait_pv(o_tok, v_desc, v_ring, v_full, v_empty, k_empty, j - 1, n, row0,
                          STAGES, REFILL, PROFILE, JOINT)
        enter("softmax", PROFILE)
        if not EARLY:
            acc = rescale(acc, alpha)
        p = pack(p, dtype, D, num_warps)
        exit("softmax", PROFILE)

    # the last P·V
    vs = acquire(v_full, n - 1, STAGES)
    if TURNS:
        wait_turn(turn, n, WG, NAMED)
    if EARLY:
        acc = rescale(acc, alpha)
    acc = pv(p, v_ring.index(vs), acc)
    if TURNS:
        pass_turn(turn, WG, CONSUMERS, NAMED, LAST=True)
        if NAMED:  # or ptxas sinks the bar.arrive below ~290 epilogue instructions (d 128)
            schedule_fence(lse_ptr, seqlen)
    empty, at = v_release(k_empty, v_empty, n - 1, JOINT)
    release(v_desc, v_ring, v_full, empty, at, n, row0, STAGES, REFILL)
    enter("epilogue", PROFILE)
    epilogue(acc, m_i, l_i, o_ptr, lse_ptr, row0, m0, seqlen, q, num_warps)
    exit("epilogue", PROFILE)


@gluon.jit
def overlap_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
                   STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
                   num_warps: gl.constexpr, PROFILE: gl.constexpr = False,
                   FENCE: gl.constexpr = True, SOFTMAX: gl.constexpr = 0):
    gl.static_assert(not (SOFTMAX & NO_TURNS), "no_turns: overlap takes no turns (fa3 does)")
    gl.static_assert(not (SOFTMAX & (ONE_RELEASE | NAMED_TURNS)),
                     "one_release, named_turns: overlap has no producer and no turns (fa3 does)")
    single_partition(consumer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM,
                     STAGES, CONSUMERS, CAUSAL, REFILL_EACH, num_warps, PROFILE, FENCE, SOFTMAX)
