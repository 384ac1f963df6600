"""``fa3`` made persistent (``fa3_kernel(..., PERSISTENT=True)``; the launcher's
``persistent=True``): one CTA per SM walks a list of (batch·head, Q tile) tiles instead of one CTA
per tile, so a CTA's fixed costs — the cold Q load, filling the rings, draining the last P·V, the
epilogue — run under the neighbouring tiles' GEMMs instead of on an idle SM (FA3 §3's persistent
scheduler; at S 1K a CTA of the plain grid walks only 8 blocks, so they are a large share of
it: results/traces/attention_fa3_s1k.summary.json has a CTA span 29.1 K clk for 8 periods of
3.1 K)::

    producer (1 warp)                            consumer WG w (4 warps), 64 rows of each tile
    for each tile t of this CTA:                 for each tile t of this CTA:
        wait q_empty (phase t-1)                     wait q_full (phase t)
        TMA Q_t -> q_full                            the fa3 loop (overlap.consumer with turns),
        for each block j of t:                       ring positions and turns counted on from
            produce K, V at ring position it+j       the previous tile; after its last Q·Kᵀ:
                                                     arrive q_empty  -> the producer loads Q_{t+1},
                                                     and K/V of t+1, under this tile's tail
                                                 epilogue: O through its own shared buffer

* **Tile order** (``tile_coords``, ``cta_tile``): non-causal, Q tiles of one head are consecutive
  (the ~132 tiles in flight share few heads' K and V in L2), CTAs take them round-robin. Causal,
  longest-processing-time first: every head's last Q tile (the most blocks), then every head's
  next-to-last, ..., handed out in a zigzag so each CTA's rounds pair long with short. Causal
  with ``PAIRS`` (``persistent="pairs"``): one head's Q tiles n_m-1-k and k in a CTA's two
  consecutive rounds, pairs in head order — the same balance, few heads' K and V in flight.
* **Phases carried across tiles**: ring position ``it + j`` (``it`` = blocks of this CTA's
  earlier tiles) for K and V; turn ``tk + j`` (``tk`` = this warpgroup's earlier turns, n + 1 a
  tile); ``q_full``/``q_empty`` at the tile count's parity. With ``one_release`` (V's slots
  come back through K's ``empty``, one position later: one arrive frees K_j and V_{j-1}), a
  tile's last V goes back with the next tile's first K, after its Q·Kᵀ; the CTA's last V is
  never given back (no load waits for it).
* **O staged in its own buffer** (one a warpgroup; at d 256 the 227 KiB hold only one, which the
  warpgroups take in turns, ``epi_turn``), so Q is free after the last Q·Kᵀ. For contiguous
  tensors the store stays a generic masked store (rows past S belong to the next head in the 2-D
  view, which a TMA store would overwrite): no async-proxy write reads the buffer, so no proxy
  fence is needed; a ``thread_barrier`` keeps a warpgroup's next tile's writes behind its last
  tile's reads. Through rank-4 descriptors (``boxes.py``) O goes out by TMA, and the thread that
  issued the copy waits for it to have read the buffer before that barrier.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier

from ..ring import Ring, Turns, meet_after_arrive, wait_slot
from ..roles import warp_specialize
from . import boxes
from .partitions import allocate, consumer_regs, producer_regs
from .steps import NO_TURNS, ONE_RELEASE, num_blocks, q_rows
from .tile import Tile

SMEM_LIMIT = 227 * 1024


@gluon.constexpr_function
def o_buffers(BM, BN, D, STAGES, CONSUMERS, elem_bytes=2):
    """O staging buffers (64 x D each) that fit beside Q and the K and V rings: one per consumer
    warpgroup, else one they share (d 256: 64 + 128 + 64 KiB is over 227 KiB)."""
    base = BM * D * elem_bytes + 2 * STAGES * BN * D * elem_bytes + 1024
    return CONSUMERS if base + CONSUMERS * 64 * D * elem_bytes <= SMEM_LIMIT else 1


@gluon.jit
def tile_count(q_desc, seqlen, BM: gl.constexpr):
    """(Q tiles per head, batch·heads, tiles): the heads from the 2-D view's rows (or the rank-4
    descriptor's batch and heads, ``boxes.py``)."""
    n_m = gl.cdiv(seqlen, BM)
    if boxes.per_head(q_desc):
        heads = q_desc.shape[0] * q_desc.shape[1]
    else:
        heads = q_desc.shape[0] // seqlen
    return n_m, heads, n_m * heads


@gluon.jit
def tile_coords(t, i, n_m, heads, seqlen, BM: gl.constexpr, D: gl.constexpr,
                CAUSAL: gl.constexpr, PAIRS: gl.constexpr):
    """Tile ``t`` (``cta_tile``'s) of round ``i`` -> (batch·head, Q tile index). Non-causal: a
    head's Q tiles consecutive. Causal: longest first — every head's last Q tile, then every
    head's next-to-last, ... (no L2 sections of heads, as FA3 has: with tiles handed out
    statically, sections put a short tile beside a long one in the same round; the ~132 tiles in
    flight still share each head's K and V, 132 / heads tiles a head). ``PAIRS`` (causal): ``t``
    is a pair of one head's Q tiles, m and n_m-1-m, the long one in even rounds."""
    if CAUSAL and PAIRS:
        half = gl.cdiv(n_m, 2)
        bh = t // half
        k = t - bh * half
        m = gl.where(i % 2 == 0, n_m - 1 - k, k)
    elif CAUSAL:
        r = t // heads
        bh = t - r * heads
        m = n_m - 1 - r
    else:
        bh = t // n_m
        m = t - bh * n_m
    return bh, m


@gluon.jit
def rounds(n_m, heads, tiles, P, CAUSAL: gl.constexpr, PAIRS: gl.constexpr):
    """How many tiles each CTA looks at (``cta_tile``'s i; the last may be past the end)."""
    if CAUSAL and PAIRS:
        return 2 * gl.cdiv(heads * gl.cdiv(n_m, 2), P)
    return gl.cdiv(tiles, P)


@gluon.jit
def cta_tile(i, n_m, heads, tiles, P, CAUSAL: gl.constexpr, PAIRS: gl.constexpr):
    """This CTA's i-th tile and whether there is one (the last rounds may be past the end).
    Round-robin; causal, in a zigzag (even rounds CTA p takes the p-th tile of the round, odd
    rounds the (P-1-p)-th): the tiles come longest first, and plain round-robin gives CTA 0 the
    longest tile of every round (11-20 % under the plain grid at causal S 4K-16K,
    results/h200-attention-persistent.json; by the host's count CTA 0 got 1.16-1.42x the mean
    blocks, the zigzag over this order 1.00-1.03x).
    ``PAIRS`` (causal): one pair of a head's Q tiles, m and n_m-1-m (every pair n_m + 1 blocks at
    BM = BN), a CTA in two consecutive rounds, the pairs handed out in head order — so every CTA
    has the same work, and the ~P pairs in flight span P / (n_m / 2) heads, whose K and V stay
    in L2 (the zigzag's P heads at once did not: at S 1K it lost 3-10 % where the model, which
    has no L2 locality, gave +23 %). A pair whose two tiles are one (the middle of an odd n_m)
    has no second round: with n_m odd the work is not even (S 1K, 4K, 16K at BM 128 have n_m
    even)."""
    p = gl.program_id(0)
    if CAUSAL and PAIRS:
        half = gl.cdiv(n_m, 2)
        q = (i // 2) * P + p
        k = q - (q // half) * half
        return q, (q < heads * half) & ((i % 2 == 0) | (k < n_m - 1 - k))
    if CAUSAL:
        p = gl.where(i % 2 == 0, p, P - 1 - p)
    t = i * P + p
    return t, t < tiles


@gluon.jit
def produce_at(desc, ring_smem, full, empty, pos, row0, row, STAGES: gl.constexpr,
               LAG: gl.constexpr = 0):
    """Ring position ``pos`` (counted across tiles) <- the block at ``row`` of the sequence at
    ``row0`` of the 2-D view, once ``empty`` says so at position ``pos + LAG`` (``one_release``:
    V's slots come back through K's ``empty``, one position later)."""
    wait_slot(empty, pos + LAG, STAGES)
    s = pos % STAGES
    mbarrier.expect(full.index(s), desc.block_type.nbytes)
    boxes.load(desc, row0, row, full.index(s), ring_smem.index(s))


@gluon.jit
def producer(q_desc, k_desc, v_desc, seqlen, BM: gl.constexpr, STAGES: gl.constexpr,
             CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr, q_smem, k_ring, v_ring, q_full,
             q_empty, k_full, v_full, k_empty, v_empty, PAIRS: gl.constexpr,
             SOFTMAX: gl.constexpr):
    BN: gl.constexpr = boxes.box_rows(k_desc)
    ONE: gl.constexpr = (SOFTMAX & ONE_RELEASE) != 0
    D: gl.constexpr = k_ring.type.shape[2]
    ROWS: gl.constexpr = boxes.box_rows(q_desc)
    n_m, heads, tiles = tile_count(q_desc, seqlen, BM)
    it = 0
    ti = 0
    P = gl.num_programs(0)
    for i in range(rounds(n_m, heads, tiles, P, CAUSAL, PAIRS)):
        tile, valid = cta_tile(i, n_m, heads, tiles, P, CAUSAL, PAIRS)
        if valid:
            bh, m = tile_coords(tile, i, n_m, heads, seqlen, BM, D, CAUSAL, PAIRS)
            row0 = bh * seqlen
            m0 = m * BM
            mbarrier.wait(q_empty, (ti & 1) ^ 1)  # every consumer's last Q·Kᵀ of the last tile
            mbarrier.expect(q_full, CONSUMERS * q_desc.block_type.nbytes)
            for w in gl.static_range(CONSUMERS):
                boxes.load(q_desc, row0, m0 + w * ROWS, q_full, q_smem.index(w))
            n = num_blocks(m0, seqlen, BM, BN, CAUSAL)
            for j in range(n):
                produce_at(k_desc, k_ring, k_full, k_empty, it + j, row0, j * BN, STAGES)
                if ONE:
                    produce_at(v_desc, v_ring, v_full, k_empty, it + j, row0, j * BN, STAGES, 1)
                else:
                    produce_at(v_desc, v_ring, v_full, v_empty, it + j, row0, j * BN, STAGES)
            it += n
            ti += 1


@gluon.jit
def consumer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, o_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty,
             turn, epi_turn, num_warps: gl.constexpr, FENCE: gl.constexpr, SOFTMAX: gl.constexpr,
             PAIRS: gl.constexpr, PROFILE: gl.constexpr, WG: gl.constexpr):
    """``overlap.consumer`` with turns (fa3's loop), once per tile of this CTA, at ring
    positions ``it + j`` and turns ``tk + j`` (``sim/attention/persistent.py``'s ``consumer``)."""
    M: gl.constexpr = q_smem.type.shape[1]
    D: gl.constexpr = q_smem.type.shape[2]
    BN: gl.constexpr = k_ring.type.shape[1]
    O_BUFS: gl.constexpr = o_smem.type.shape[0]
    q = q_smem.index(WG)
    o_buf = o_smem.index(WG % O_BUFS)
    k = Ring(k_ring, k_full, k_empty)
    if SOFTMAX & ONE_RELEASE:  # V's slot j-1 goes back with K's slot j, one arrive (overlap.py)
        v = Ring(v_ring, v_full, k_empty, LAG=1)
    else:
        v = Ring(v_ring, v_full, v_empty)
    turns = Turns(turn, WG, CONSUMERS)
    TURNS: gl.constexpr = not (SOFTMAX & NO_TURNS)  # no_turns: each issues once its K, V are in
    epi_turns = Turns(epi_turn, WG, CONSUMERS)  # one O buffer for all: they take turns
    n_m, heads, tiles = tile_count(q_desc, seqlen, BM)
    it = 0  # ring position of this tile's block 0
    ti = 0  # tiles so far (this warpgroup's turns so far: it + ti, n + 1 a tile)
    P = gl.num_programs(0)
    for i in range(rounds(n_m, heads, tiles, P, CAUSAL, PAIRS)):
        tile, valid = cta_tile(i, n_m, heads, tiles, P, CAUSAL, PAIRS)
        if valid:
            bh, mt = tile_coords(tile, i, n_m, heads, seqlen, BM, D, CAUSAL, PAIRS)
            row0 = bh * seqlen
            m0_cta = mt * BM
            n = num_blocks(m0_cta, seqlen, BM, BN, CAUSAL)
            m0 = m0_cta + WG * M
            t = Tile(q, o_buf, q_full, row0, m0, n, q_rows(m0, M, BN, num_warps),
                     gl.to_tensor(seqlen), qk_scale, o_ptr, lse_ptr, BN, CAUSAL, num_warps,
                     PROFILE, SOFTMAX, FENCE, TURNS)  # (S = 1 arrives as a constexpr)
            m_i, l_i, acc = t.init_state()
            tk = it + ti
            t.wait_q(ti & 1)

            # block 0: the scores alone
            ks = k.acquire(it)
            if TURNS:
                turns.wait_turn(tk)
            s_tok = t.qk(k, ks, is_async=True)
            if TURNS:
                turns.pass_turn()
            s = t.wait_qk(s_tok, PENDING=0)
            if n == 1:  # Q read for the last time: the producer may load the next tile's
                mbarrier.arrive(q_empty)  # (a branch: a predicated arrive still pays its bar.sync)
            k.release(it)  # one_release: and V's slot of the last tile's last block
            if t.ONE_RELEASE:  # the loop's first waits need no meeting (ring.py)
                meet_after_arrive()
            p, alpha, m_i, l_i = t.softmax(s, m_i, l_i, 0)
            p = t.pack(p)

            for j in range(1, n):
                ks = k.acquire(it + j)
                vs = v.acquire(it + j - 1)
                if TURNS:
                    turns.wait_turn(tk + j)
                s_tok = t.qk(k, ks, is_async=True)                 # S_j = Q K_jᵀ
                o_tok = t.pv(p, v, vs, acc, is_async=True)         # O += P_{j-1} V_{j-1}
                if TURNS:
                    turns.pass_turn()
                s = t.wait_qk(s_tok)                               # the scores only
                if j == n - 1:
                    mbarrier.arrive(q_empty)
                if not t.ONE_RELEASE:  # (one_release: K_j's slot goes back with V_{j-1}'s)
                    k.release(it + j)
                p, alpha, m_i, l_i = t.softmax(s, m_i, l_i, j)
                if t.FENCE:
                    t.fence()  # or ptxas hoists P·V's wait above the softmax
                acc = t.wait_pv(o_tok, v, it + j - 1)
                acc = t.rescale(acc, alpha)
                p = t.pack(p)

            # the last P·V
            vs = v.acquire(it + n - 1)
            if TURNS:
                turns.wait_turn(tk + n)
            o_tok = t.pv(p, v, vs, acc, is_async=True)
            if TURNS:
                turns.pass_turn()
            # one_release: this slot goes back with the next tile's first K (the arrive at
            # position it + n is that K's: made here, it would free the K before its Q·Kᵀ)
            acc = t.wait_pv(o_tok, v, it + n - 1, GIVE_BACK=not t.ONE_RELEASE)
            if O_BUFS < CONSUMERS:  # one shared O buffer: the warpgroups take turns
                epi_turns.wait_turn(ti)
            gl.thread_barrier()  # this warpgroup's reads of the buffer (last tile) are done
            t.epilogue(acc, m_i, l_i)
            if O_BUFS < CONSUMERS:
                gl.thread_barrier()  # every warp has read the buffer before the next WG writes it
                epi_turns.pass_turn()
            it += n
            ti += 1


@gluon.jit
def fa3_persistent(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
                   STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
                   FENCE: gl.constexpr = True, SOFTMAX: gl.constexpr = 0,
                   PAIRS: gl.constexpr = False, PROFILE: gl.constexpr = False):
    """The persistent fa3 region: ``partitions.allocate``'s buffers and barriers, the O buffers,
    ``q_empty`` (one arrive per consumer) and ``epi_turn``; consumer 0 the default partition."""
    gl.static_assert(FENCE != "hoisted", "persistent fa3: FENCE True or False")
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn = allocate(
        q_desc, k_desc, v_desc, STAGES, CONSUMERS, CONSUMERS, True, True, SOFTMAX)
    BN: gl.constexpr = k_ring.type.shape[1]
    D: gl.constexpr = k_ring.type.shape[2]
    O_BUFS: gl.constexpr = o_buffers(BM, BN, D, STAGES, CONSUMERS)
    o_smem = boxes.allocate(q_desc, O_BUFS)
    q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    epi_turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_empty, count=CONSUMERS)
    for w in gl.static_range(CONSUMERS):
        mbarrier.init(epi_turn.index(w), count=1)
    fence_async_shared()
    gl.static_assert(CONSUMERS == 2 or CONSUMERS == 3, "1 producer + 2 or 3 consumer warpgroups")
    warp_specialize(
        consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES, CONSUMERS,
                   CAUSAL, q_smem, k_ring, v_ring, o_smem, q_full, q_empty, k_full, v_full,
                   k_empty, v_empty, turn, epi_turn, 4, FENCE, SOFTMAX, PAIRS, PROFILE),
        producer, (q_desc, k_desc, v_desc, seqlen, BM, STAGES, CONSUMERS, CAUSAL, q_smem, k_ring,
                   v_ring, q_full, q_empty, k_full, v_full, k_empty, v_empty, PAIRS, SOFTMAX),
        CONSUMERS, consumer_regs(CONSUMERS), producer_regs(CONSUMERS))
