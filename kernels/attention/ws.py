"""``ws`` — warp specialization (FA3 alg. 1): a producer fills the K/V rings, consumers compute.

Roles, as in ``sim/attention/ws.py``::

    producer (1 warp, setmaxnreg 24)         consumer WG w (4 warps, setmaxnreg 240), 64 rows
    load_q                                   wait q_full
    for each block j:                        for each block j:
        produce(k, j): wait k.empty[s],          acquire(k, j): wait k.full[s]
                       TMA K_j -> k.full[s]      qk: S = Q K_jᵀ (wgmma, wait)
        produce(v, j): wait v.empty[s],          release(k, j): arrive k.empty[s]
                       TMA V_j -> v.full[s]      softmax (the tensor cores idle for this WG)
                                                 rescale O
                                                 acquire(v, j): wait v.full[s]
                                                 pack P; pv: O += P V_j (wgmma, wait)
                                                 release(v, j): arrive v.empty[s]
                                             epilogue: O /= l, LSE, store

Nothing orders the consumers: they wake on the same ``full`` barrier and share the tensor cores,
and then the exp unit, at the same moments. ``empty`` barriers count one arrive per consumer.

The same consumer loop serves ``ws_pingpong`` (``t.TURNS``: ``wait_turn`` before Q·K_jᵀ,
``pass_turn`` once the scores are in) and, with in-line TMA instead of a producer (the rings'
``release`` refills the slot itself, ``partitions.InlineRing``), the ``pipelined`` and
``sequential`` variants (``sequential``: both slots only once the whole block is done). The model
writes those two out in ``sim/attention/pipelined.py`` and ``sequential.py``, with the same steps.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .boxes import box_rows
from .partitions import InlineRing, rings, warp_specialized
from .steps import load_q, num_blocks, produce, tile_position


@gluon.jit
def producer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             PROFILE: gl.constexpr = False, SOFTMAX: gl.constexpr = 0):
    """The producer warp (FA3 alg. 1; ``sim/attention/ws.py``'s ``producer``) of ``ws``,
    ``ws_pingpong`` and ``fa3``: ``load_q`` once, then for each block ``produce`` K_j and V_j
    (wait for a free slot, expect its bytes, TMA). Its rings are the consumers'
    (``partitions.rings``: with ``one_release`` V_j's slot is the one freed with K_{j-S+1}, so
    each slot is still reloaded only once every consumer has waited for the last wgmma that
    read it; V_{S-1}, the V ring's first lap, then also waits for K_0 to be read)."""
    BN: gl.constexpr = box_rows(k_desc)
    k, v = rings(k_ring, v_ring, k_full, v_full, k_empty, v_empty, SOFTMAX, PROFILE)
    row0, m0 = tile_position(seqlen, BM, CAUSAL)
    load_q(q_desc, q_smem, q_full, row0, m0, CONSUMERS)
    for j in range(num_blocks(m0, seqlen, BM, BN, CAUSAL)):
        produce(k_desc, k, j, row0)                        # wait k.empty, TMA K_j -> k.full
        produce(v_desc, v, j, row0)                        # wait v.empty, TMA V_j -> v.full


@gluon.jit
def consumer(t, k, v, turns):
    """One consumer warpgroup of ``ws`` (``sim/attention/ws.py``'s ``consumer``, step for step),
    ``ws_pingpong`` (``t.TURNS``), ``pipelined`` and ``sequential`` (in-line rings)."""
    SEQUENTIAL: gl.constexpr = isinstance(v, InlineRing) and not v.SYNC
    m_i, l_i, acc = t.init_state()
    t.wait_q(0)
    for j in range(t.n):
        ks = k.acquire(j)                                  # K_j landed
        if t.TURNS:
            turns.wait_turn(j)                             # my turn on the tensor cores
        s = t.qk(k, ks)                                       # S = Q K_jᵀ; wgmma wait
        if t.TURNS:
            turns.pass_turn()                              # scores in: the next WG's turn
        if not SEQUENTIAL:
            k.release(j)
        p, alpha, m_i, l_i = t.softmax(s, m_i, l_i, j)     # the tensor cores idle for this WG
        acc = t.rescale(acc, alpha)
        vs = v.acquire(j)                                  # V_j landed
        p = t.pack(p)                                      # P to fp16, P·V's A operand
        acc = t.pv(p, v, vs, acc)                             # O += P V_j; wgmma wait
        if SEQUENTIAL:  # block j fully done: only now load block j + 1 into the one slot
            k.release(j)
        v.release(j)
    t.epilogue(acc, m_i, l_i)


@gluon.jit
def ws_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
              STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
              num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    gl.static_assert(num_warps == 4, "the default partition is consumer 0 (one warpgroup)")
    warp_specialized(consumer, producer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
                     BM, STAGES, CONSUMERS, CAUSAL, TURNS=False, PROFILE=PROFILE)
