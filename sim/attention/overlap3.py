"""`overlap3` — the 3-stage intra-warpgroup pipeline of FA3 app. B.3, on top of `ws` + turns.

Softmax of block j runs under *both* Q·K_{j+1}ᵀ and P_{j-1}·V_{j-1}. That needs two score tiles
and one P tile live per thread; at the 240-register budget the K/V block must shrink (d 128: 176 →
112), so every wgmma is narrower and every block pays its fixed costs over fewer FLOPs; and
since V_{j-1} is held a block longer, the rings need a third slot (which the narrower blocks
leave room for). The paper
found it slower than the 2-stage `fa3`; the model shows why.
"""
from .cta import AttentionCTA
from .ws import producer

WARP_SPECIALIZED = True
LIVE_S, LIVE_P = 2, 1           # S_j, S_{j+1} and P_{j-1} live together
SHRINK_BLOCK_N = True           # take the widest block_n that fits the registers
STAGES = 3                      # V_{j-1} is held a block longer: a third slot keeps K flowing


def consumer(cta: AttentionCTA, w: int):
    me, n = cta.wg(w), cta.n_blocks
    turn = 0

    def issue(k_block, v_block):
        """On my turn: Q·K_{k_block}ᵀ and P·V_{v_block}, either may be None."""
        nonlocal turn
        if k_block is not None:
            yield from cta.acquire(me, cta.k, k_block)
        if v_block is not None:
            yield from cta.acquire(me, cta.v, v_block)
        yield from cta.wait_turn(w, turn)
        turn += 1
        scores = cta.qk(w, k_block) if k_block is not None else None
        out = cta.pv(w, v_block) if v_block is not None else None
        yield cta.issued(w)
        cta.pass_turn(w)
        return scores, out

    yield from cta.wait(me, cta.q_full, 0)
    scores, _ = yield from issue(0, None)                        # S_0
    for j in range(n):
        nxt, out = yield from issue(j + 1 if j + 1 < n else None, j - 1 if j >= 1 else None)
        yield scores                                             # S_j
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)                             # under QK_{j+1} and PV_{j-1}
        if out is not None:
            yield out
            cta.release(cta.v, j - 1)
        yield from cta.rescale(w, j)
        yield from cta.pack(w, j)
        scores = nxt
    _, out = yield from issue(None, n - 1)
    yield out
    cta.release(cta.v, n - 1)
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
