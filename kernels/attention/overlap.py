"""``overlap`` — intra-warpgroup GEMM/softmax overlap (FA3 alg. 2), no role split
(``sim/attention/overlap.py``).

Each warpgroup issues Q·K_jᵀ and P_{j-1}·V_{j-1} back to back as async wgmmas, waits only for the
scores (``warpgroup_mma_wait(1)``: the older group, Q·K_jᵀ, is done; P·V may still run), and runs
softmax j while P_{j-1}·V_{j-1} is still on the tensor cores; then ``warpgroup_mma_wait(0)`` and
the rescale of O, which needs that P·V landed. The price is registers: S_j and P_{j-1} are live
at once. With no producer, the consumer warps refill the rings in-line as in ``pipelined``.

The same loop, with a producer and turns (``t.TURNS``: ``wait_turn`` before issuing the GEMMs,
``pass_turn`` once they are queued, before their wait), is the ``fa3`` consumer; every GEMM is
issued async and waited for by a step of its own, as in the model::

    wait_q; acquire(k, 0); [wait_turn]; qk: S_0 = Q K_0ᵀ; [pass_turn]; wait_qk; release(k, 0)
    softmax 0; pack
    for j in 1 .. n-1:
        acquire(k, j); acquire(v, j-1); [wait_turn]
        qk: S_j = Q K_jᵀ; pv: O += P_{j-1} V_{j-1}; [pass_turn]
        wait_qk -> S_j (wgmma_wait(1));  release(k, j);  softmax j   # under P_{j-1} V_{j-1}
        wait_pv -> O (wgmma_wait(0)), release(v, j-1);  rescale O; pack P_j
    acquire(v, n-1); [wait_turn]; pv: O += P_{n-1} V_{n-1}; [pass_turn]; wait_pv, release(v, n-1)
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

``SOFTMAX & COND_RESCALE`` (FA4's conditional rescaling, ``steps.softmax``): a row keeps its
running max until a block's passes it by more than 2^8, and the rescale of O runs only when a
row of the warpgroup moved (``Tile.rescale``); on inputs whose max settles in the first blocks
its D/2 FMULs a thread leave the loop.

``SOFTMAX & RESCALE_EARLY`` moves the rescale of O from after ``wgmma_wait(0)`` (where its FMULs
stand between P_{j-1}·V_{j-1} landing and the next issue) to between the two issues, as FA3 does
above d 128 (``RescaleOBeforeGemm``): O *= alpha_{j-1} runs while Q·K_jᵀ is on the tensor cores,
and P_{j-1}·V_{j-1} then accumulates onto the rescaled O — the same products in the same order::

        qk: S_j = Q K_jᵀ (async); rescale O (alpha_{j-1}); pv: O += P_{j-1} V_{j-1} (async)
        ...
        wgmma_wait(0) -> O;    release(v, j-1);  pack P_j

Two more switches take barriers out of fa3's loop. Triton 3.6 makes an mbarrier arrive with
one thread for the warpgroup, after a ``bar.sync`` of the warpgroup that the arrive's lowering
puts before it; its barrier pass (``lib/Analysis/Membar.cpp``), which runs before that and so
does not see it, counts the arrive as a write of shared memory and puts one more ``bar.sync``
before the next mbarrier wait. So the loop's three arrives — ``pass_turn``, ``release(k, j)``,
``release(v, j-1)`` — cost a ``bar.sync`` each, and the next block's first wait a fourth.

* ``SOFTMAX & ONE_RELEASE`` (``one_release``): no ``release(k, j)`` after the scores' wait; the arrive
  after P_{j-1}·V_{j-1}'s wait, at ring position j of ``k_empty``, frees K_j's slot and V_{j-1}'s
  at once (V's ring is built so: ``partitions.rings``; the producer waits for it as both). Block 0's release frees
  K_0 alone, the last one V_{n-1} alone. Safe: when that arrive is made this warpgroup has
  waited for every wgmma it issued (``warpgroup_mma_wait(0)``), the two that read K_j and
  V_{j-1} included, and the producer reloads neither slot before every consumer has arrived.
  The price: K_j's slot goes back a softmax later than before. The fourth ``bar.sync`` is
  made right after that arrive (``ring.meet_after_arrive``), where the warps have just met,
  not at the next block's top after the rescale and the pack.
* ``SOFTMAX & NAMED_TURNS`` (``named_turns``): ``wait_turn``/``pass_turn`` on named barriers
  (``bar.sync``/``bar.arrive``, ``kernels/ring.py``), no mbarrier, so no ``bar.sync`` before
  the hand-over and no turn mbarrier wait.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ..ring import meet_after_arrive
from .partitions import REFILL_EACH, single_partition
from .steps import NAMED_TURNS, NO_TURNS, ONE_RELEASE
from .tile import HOISTED


@gluon.jit
def consumer(t, k, v, turns):
    """One consumer warpgroup of ``overlap`` (no turns, in-line loads) and of ``fa3`` (a producer
    and ``t.TURNS``): ``sim/attention/overlap.py``'s ``consumer``, step for step."""
    gl.static_assert(not (t.RESCALE_EARLY and t.COND_RESCALE),
                     "rescale_early and cond_rescale: the early rescale holds alpha alone")
    m_i, l_i, acc = t.init_state()
    t.wait_q(0)

    # block 0: the scores alone (nothing to overlap them with yet)
    ks = k.acquire(0)
    if t.TURNS:
        turns.wait_turn(0, FIRST=True)
    s_tok = t.qk(k, ks, is_async=True)                     # S_0 = Q K_0ᵀ
    if t.TURNS:
        turns.pass_turn()
    s = t.wait_qk(s_tok, PENDING=0)
    k.release(0)
    if t.ONE_RELEASE:  # the loop's first waits need no meeting (ring.py)
        meet_after_arrive()
    p, alpha, m_i, l_i = t.softmax(s, m_i, l_i, 0)
    p = t.pack(p)

    for j in range(1, t.n):
        ks = k.acquire(j)
        vs = v.acquire(j - 1)
        if t.TURNS:
            turns.wait_turn(j)
        s_tok = t.qk(k, ks, is_async=True)                    # S_j = Q K_jᵀ
        if t.RESCALE_EARLY:  # alpha_{j-1}; held below the issue, or LLVM and ptxas move it up
            acc = t.rescale(acc, t.hold(alpha))
        o_tok = t.pv(p, v, vs, acc, is_async=True)            # O += P_{j-1} V_{j-1}
        if t.TURNS:
            turns.pass_turn()                              # both queued: the next WG's turn
        s = t.wait_qk(s_tok)                               # the scores only
        if t.FENCE == HOISTED:
            acc = t.wait_pv(o_tok, v, j - 1)
        if not t.ONE_RELEASE:  # (one_release: K_j's slot goes back with V_{j-1}'s)
            k.release(j)
        p, alpha, m_i, l_i = t.softmax(s, m_i, l_i, j)     # under P_{j-1} V_{j-1}
        if t.FENCE != HOISTED:
            if t.FENCE:
                t.fence()  # or ptxas hoists P·V's wait above the softmax
            acc = t.wait_pv(o_tok, v, j - 1)
        if not t.RESCALE_EARLY:
            acc = t.rescale(acc, alpha)
        p = t.pack(p)

    # the last P·V
    vs = v.acquire(t.n - 1)
    if t.TURNS:
        turns.wait_turn(t.n)
    if t.RESCALE_EARLY:
        acc = t.rescale(acc, alpha)
    o_tok = t.pv(p, v, vs, acc, is_async=True)             # O += P_{n-1} V_{n-1}
    if t.TURNS:
        turns.pass_turn(LAST=True)
        if t.NAMED_TURNS:  # or ptxas sinks the bar.arrive below ~290 epilogue instructions
            t.fence()
    acc = t.wait_pv(o_tok, v, t.n - 1)
    t.epilogue(acc, m_i, l_i)


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
