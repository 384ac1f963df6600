"""``ws`` — warp specialization (FA3 alg. 1): a producer fills the K/V rings, consumers compute.

Roles, as in ``sim/attention/ws.py``::

    producer (1 warp, setmaxnreg 24)             consumer WG w (4 warps, setmaxnreg 240), 64 rows
    Q once -> q_full                             wait q_full
    for each block j:                            for each block j:
        wait k.empty[s]; TMA K_j -> k.full[s]        wait k.full[s]; S = Q K_jᵀ (wgmma, wait)
        wait v.empty[s]; TMA V_j -> v.full[s]        arrive k.empty[s]
                                                     softmax (the tensor cores idle for this WG)
                                                     rescale O
                                                     wait v.full[s]; O += P V_j (wgmma, wait)
                                                     arrive v.empty[s]
                                                 epilogue: O /= l, LSE, store

Nothing orders the consumers: they wake on the same ``full`` barrier and share the tensor cores,
and then the exp unit, at the same moments. ``empty`` barriers count one arrive per consumer.

The same consumer loop serves ``ws_pingpong`` (``TURNS``: wait for my turn before Q·K_jᵀ, hand
it on once the scores are in) and, with in-line TMA instead of a producer (``REFILL``), the
``pipelined`` and ``sequential`` variants — as in the model, where they reuse this loop too.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from ..scopes import enter, exit
from .common import (
    acquire,
    epilogue,
    init_state,
    load_block,
    load_q,
    num_blocks,
    pass_turn,
    producer,
    pv,
    q_rows,
    qk,
    rescale,
    softmax,
    tile_position,
    to_operand,
    wait_turn,
    warp_specialized,
)

NO_REFILL = gl.constexpr(0)  # a producer warp loads (ws, ws_pingpong)
REFILL_EACH = gl.constexpr(1)  # in-line: refill a slot as soon as its GEMM is done (pipelined)
REFILL_BLOCK = gl.constexpr(2)  # in-line: load block j+1 once block j is done (sequential)


@gluon.jit
def release(desc, ring, full, empty, slot, j_next, n, row0, STAGES: gl.constexpr,
            REFILL: gl.constexpr):
    """Block j's slot is done: hand it to the producer, or (no producer) let every consumer warp
    get here — nobody may overwrite a slot another warp still reads — and refill it in-line."""
    if REFILL == 0:
        mbarrier.arrive(empty.index(slot))
    else:
        gl.thread_barrier()
        load_block(desc, ring, full, j_next, row0, STAGES, pred=j_next < n)


@gluon.jit
def consumer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             WG: gl.constexpr, TURNS: gl.constexpr, REFILL: gl.constexpr,
             num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    M: gl.constexpr = q_smem.type.shape[1]  # my rows: 64 (ws) or the whole tile (in-line)
    D: gl.constexpr = q_smem.type.shape[2]
    BN: gl.constexpr = k_ring.type.shape[1]
    row0, m0_cta = tile_position(seqlen, BM, CAUSAL)
    n = num_blocks(m0_cta, seqlen, BM, BN, CAUSAL)
    m0 = m0_cta + WG * M
    if REFILL != 0:  # no producer: fill the rings before the loop (the prologue)
        load_q(q_desc, q_smem, q_full, row0, m0_cta, 1)
        for i in gl.static_range(STAGES):
            load_block(k_desc, k_ring, k_full, i, row0, STAGES, pred=i < n)
            load_block(v_desc, v_ring, v_full, i, row0, STAGES, pred=i < n)
    rows = q_rows(m0, M, BN, num_warps)
    m_i, l_i, acc = init_state(M, D, BN, num_warps)
    q = q_smem.index(WG)
    enter("wait Q", PROFILE)  # the CTA's prologue: its Q tile, a cold read (run G2)
    mbarrier.wait(q_full, 0)
    exit("wait Q", PROFILE)
    for j in range(n):
        enter("wait K", PROFILE)
        ks = acquire(k_full, j, STAGES)  # K_j landed
        exit("wait K", PROFILE)
        if TURNS:
            enter("wait turn", PROFILE)
            wait_turn(turn, j, WG)  # my turn on the tensor cores
            exit("wait turn", PROFILE)
        enter("QK", PROFILE)
        s = qk(q, k_ring.index(ks), num_warps)  # S = Q K_jᵀ; wgmma wait
        exit("QK", PROFILE)
        if TURNS:
            pass_turn(turn, WG, CONSUMERS)  # scores in: the next WG's turn
        if REFILL != 2:
            release(k_desc, k_ring, k_full, k_empty, ks, j + STAGES, n, row0, STAGES, REFILL)
        enter("softmax", PROFILE)
        p, alpha, m_i, l_i = softmax(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN, CAUSAL)
        acc = rescale(acc, alpha)
        exit("softmax", PROFILE)
        enter("wait V", PROFILE)
        vs = acquire(v_full, j, STAGES)  # V_j landed
        exit("wait V", PROFILE)
        enter("PV", PROFILE)  # (the fp16 pack of P is in here: it is an argument of pv)
        acc = pv(to_operand(p, q_smem.dtype, D, num_warps), v_ring.index(vs), acc)  # O += P V_j
        exit("PV", PROFILE)
        if REFILL == 2:  # block j fully done: only now load block j + 1
            release(k_desc, k_ring, k_full, k_empty, ks, j + 1, n, row0, STAGES, REFILL)
            load_block(v_desc, v_ring, v_full, j + 1, row0, STAGES, pred=j + 1 < n)
        else:
            release(v_desc, v_ring, v_full, v_empty, vs, j + STAGES, n, row0, STAGES, REFILL)
    enter("epilogue", PROFILE)
    epilogue(acc, m_i, l_i, o_ptr, lse_ptr, row0, m0, seqlen, q, num_warps)
    exit("epilogue", PROFILE)


@gluon.jit
def ws_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
              STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
              num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    gl.static_assert(num_warps == 4, "the default partition is consumer 0 (one warpgroup)")
    warp_specialized(consumer, producer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
                     BM, STAGES, CONSUMERS, CAUSAL, False, PROFILE)
