"""`overlap` — intra-warpgroup GEMM/softmax overlap (FA3 alg. 2), no role split.

Each warpgroup issues Q·Kⱼᵀ and P_{j-1}·V_{j-1} back to back, waits only for the scores
(warpgroup_mma_wait<1>), and runs softmax j while P·V still runs on the tensor core. The price is
registers: the scores of block j and P of block j-1 are live at once. There is no producer: the
consumers meet at a CTA barrier and warpgroup 0 issues the TMA loads in-line, as in `pipelined`.

Per block j the consumer runs acquire(k, j), acquire(v, j-1), [wait_turn], qk, pv, [pass_turn],
the scores' wait, release(k, j), softmax, P·V's wait, release(v, j-1), rescale, pack.
"""
from . import pipelined
from .cta import AttentionCTA

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 1           # S_j and P_{j-1} live together
# The shipped kernels call `common.schedule_fence` between the scores' wait and the softmax, which
# keeps ptxas from hoisting P·V's wait above the softmax. `fence=False` models the kernel compiled
# without it (the fence's A/B: results/h200-ab-fence.json, results/h200-ab-fence-64x128.json).
FENCE = True


def consumer(cta: AttentionCTA, w: int, turns: bool = False, fence: bool = FENCE):
    """With `turns` (fa3) the GEMM issue waits for this warpgroup's turn and a producer loads;
    without, warpgroup 0 loads in-line. `fence=False` is the kernel as ptxas compiles it without
    `common.schedule_fence`: the wait for P_{j-1}·V_{j-1} before the softmax, and the pack of
    P_j among its exps (as its SASS shows)."""
    me, n = cta.wg(w), cta.n_blocks
    inline_tma = not turns
    if inline_tma and w == 0:
        pipelined.prologue(cta, me)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(n + 1):
        if j < n:
            yield from cta.acquire(me, cta.k, j)
        if j > 0:
            yield from cta.acquire(me, cta.v, j - 1)
        if turns:
            yield from cta.wait_turn(w, j)
        scores = cta.qk(w, j) if j < n else None                # S_j = Q K_jᵀ (async)
        out = cta.pv(w, j - 1) if j > 0 else None               # O += P_{j-1} V_{j-1} (async)
        yield cta.issued(w)                                     # the pipe has taken both
        if turns:
            cta.pass_turn(w)                                    # both queued: the next WG's turn
        if scores is not None:
            yield scores                                        # wgmma_wait<1>: scores only
            if inline_tma:
                yield from pipelined.release(cta, w, cta.k, j)
            else:
                cta.release(cta.k, j)
            if fence:
                yield from cta.softmax(w, j)                    # under P_{j-1} V_{j-1}
        if out is not None:
            yield out                                           # wgmma_wait<0>
            if inline_tma:
                yield from pipelined.release(cta, w, cta.v, j - 1)
            else:
                cta.release(cta.v, j - 1)
        if scores is not None:
            if not fence:                                       # the softmax after P·V, its
                yield from cta.softmax(w, j, pack=True)         # pack among the exps
            yield from cta.rescale(w, j)                        # needs P_{j-1} V_{j-1} done
            if fence:
                yield from cta.pack(w, j)                       # into the registers it read
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
