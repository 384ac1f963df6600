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

The same consumer loop serves ``ws_pingpong`` (``TURNS``: ``wait_turn`` before Q·K_jᵀ,
``pass_turn`` once the scores are in) and, with in-line TMA instead of a producer (``REFILL``:
``release`` refills the slot itself), the ``pipelined`` and ``sequential`` variants. The model
writes those two out in ``sim/attention/pipelined.py`` and ``sequential.py``, with the same steps.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from ..ring import acquire, pass_turn, wait_turn
from ..scopes import enter, exit
from .partitions import fill_rings, producer, release, warp_specialized
from .steps import (
    epilogue,
    init_state,
    load_block,
    num_blocks,
    pack,
    pv,
    q_rows,
    qk,
    rescale,
    softmax,
    tile_position,
)


@gluon.jit
def consumer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             WG: gl.constexpr, TURNS: gl.constexpr, REFILL: gl.constexpr,
             num_warps: gl.constexpr, PROFILE: gl.constexpr = False, FENCE: gl.constexpr = True,
             SOFTMAX: gl.constexpr = 0):
    M: gl.constexpr = q_smem.type.shape[1]  # my rows: 64 (ws) or the whole tile (in-line)
    D: gl.constexpr = q_smem.type.shape[2]
    BN: gl.constexpr = k_ring.type.shape[1]
    row0, m0_cta = tile_position(seqlen, BM, CAUSAL)
    n = num_blocks(m0_cta, seqlen, BM, BN, CAUSAL)
    m0 = m0_cta + WG * M
    if REFILL != 0:  # no producer: the prologue
        fill_rings(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_full, k_full, v_full, row0,
                   m0_cta, n, STAGES)
    rows = q_rows(m0, M, BN, num_warps)
    m_i, l_i, acc = init_state(M, D, BN, num_warps)
    q = q_smem.index(WG)
    enter("wait Q", PROFILE)  # the CTA's prologue: its Q tile, a cold read
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
            release(k_desc, k_ring, k_full, k_empty, j, n, row0, STAGES, REFILL)
        enter("softmax", PROFILE)
        p, alpha, m_i, l_i = softmax(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN, CAUSAL)
        acc = rescale(acc, alpha)
        exit("softmax", PROFILE)
        enter("wait V", PROFILE)
        vs = acquire(v_full, j, STAGES)  # V_j landed
        exit("wait V", PROFILE)
        enter("PV", PROFILE)  # the fp16 pack of P is in this scope too
        p = pack(p, q_smem.dtype, D, num_warps)
        acc = pv(p, v_ring.index(vs), acc)  # O += P V_j
        exit("PV", PROFILE)
        if REFILL == 2:  # block j fully done: only now load block j + 1 (one slot: j + STAGES)
            release(k_desc, k_ring, k_full, k_empty, j, n, row0, STAGES, REFILL)
            load_block(v_desc, v_ring, v_full, j + 1, row0, STAGES, pred=j + 1 < n)
        else:
            release(v_desc, v_ring, v_full, v_empty, j, n, row0, STAGES, REFILL)
    enter("epilogue", PROFILE)
    epilogue(acc, m_i, l_i, o_ptr, lse_ptr, row0, m0, seqlen, q, num_warps)
    exit("epilogue", PROFILE)


@gluon.jit
def ws_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
              STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
              num_warps: gl.constexpr, PROFILE: gl.constexpr = False):
    gl.static_assert(num_warps == 4, "the default partition is consumer 0 (one warpgroup)")
    warp_specialized(consumer, producer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale,
                     BM, STAGES, CONSUMERS, CAUSAL, TURNS=False, PROFILE=PROFILE)
