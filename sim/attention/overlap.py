"""`overlap` — intra-warpgroup GEMM/softmax overlap (FA3 alg. 2), no role split.

Each warpgroup issues Q·Kⱼᵀ and P_{j-1}·V_{j-1} back to back, waits only for the scores
(warpgroup_mma_wait<1>), and runs softmax j while P·V still runs on the tensor core. The price is
registers: the scores of block j and P of block j-1 are live at once. There is no producer: the
consumers meet at a CTA barrier and warpgroup 0 issues the TMA loads in-line, as in `pipelined`.

The consumer is written as the kernel's (`kernels/attention/overlap.py` `consumer`; the same step
names in the same order, `fidelity.pairs` holds them together):

    wait_q; acquire(k, 0); [wait_turn]; qk; [pass_turn]; wait_qk; release(k, 0); softmax 0; pack
    for j in 1 .. n-1:
        acquire(k, j); acquire(v, j-1); [wait_turn]; qk; [rescale]; pv; [pass_turn]
        wait_qk: the scores' wait; release(k, j); softmax j      # under P_{j-1} V_{j-1}
        wait_pv: P·V's wait, release(v, j-1); rescale; pack
    acquire(v, n-1); [wait_turn]; [rescale]; pv; [pass_turn]; wait_pv: P·V's wait, release(v, n-1)
    epilogue

The schedule switches (`AttentionConfig.switches`, the kernel's `softmax=` names):
``rescale_early`` rescales O by the last block's correction between the two issues, under Q·Kⱼᵀ,
instead of after P·V's wait (the bracketed `rescale`s; FA3 does so above d 128); ``no_turns``
(fa3) issues without turns, as FA3 does above d 128; ``one_release`` (fa3) gives K_j's slot back
with V_{j-1}'s, after P·V's wait; ``cond_rescale`` (FA4's conditional rescaling) keeps the
`rescale` step but does its work only when a row's max moved by more than 2^8 (`cta.rescale`).
"""
from . import pipelined
from .cta import AttentionCTA

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 1           # S_j and P_{j-1} live together
# The shipped kernels call `common.schedule_fence` between the scores' wait and the softmax, which
# keeps ptxas from hoisting P·V's wait above the softmax. `fence=False` models the kernel compiled
# without it (the fence's A/B: results/h200-ab-fence.json, results/h200-ab-fence-64x128.json).
FENCE = True


def release(cta: AttentionCTA, w: int, ring, j: int, inline_tma: bool):
    """Block j's slot is done: back to the producer, or with `inline_tma` (no producer) through
    the CTA barrier to warpgroup 0's refill (`pipelined.release`) — the kernel's `Ring.release`
    or `partitions.InlineRing.release`."""
    if inline_tma:
        yield from pipelined.release(cta, w, ring, j)
    else:
        cta.release(ring, j)


def wait_pv(cta: AttentionCTA, w: int, out, j: int, inline_tma: bool, one_release: bool = False,
            give_back: bool = True):
    """P_j·V_j done (wgmma_wait<0>): O is in, and V_j's slot goes back (the kernel's
    `Tile.wait_pv`; not with ``give_back`` off: the caller gives it back later);
    ``one_release``: K_{j+1}'s with it, in the same arrive."""
    yield out
    if not give_back:
        return
    yield from release(cta, w, cta.v, j, inline_tma)
    if one_release and j + 1 < cta.n_blocks:
        cta.release(cta.k, j + 1)


def consumer(cta: AttentionCTA, w: int, producer: bool = False, turns: bool = False,
             fence: bool = FENCE, rescale_early: bool = False, one_release: bool = False):
    """With a `producer` (fa3) a producer role loads; without, warpgroup 0 loads in-line. With
    `turns` the GEMM issue waits for this warpgroup's turn. `fence=False` is the kernel as ptxas
    compiles it without `common.schedule_fence`: the wait for P_{j-1}·V_{j-1} before the
    softmax, and the pack of P_j among its exps (as its SASS shows). ``rescale_early``: the
    rescale of O between the issues. ``one_release`` (fa3): K_j's slot goes back
    with V_{j-1}'s after P·V's wait, not after the scores' (the arrive's bar.sync it saves in the
    kernel is no cost here: the model sees only the later release)."""
    me, n = cta.wg(w), cta.n_blocks
    inline_tma = not producer
    if inline_tma and w == 0:
        pipelined.prologue(cta, me)
    yield from cta.wait_q(me, 0)

    # block 0: the scores alone (nothing to overlap them with yet)
    yield from cta.acquire(me, cta.k, 0)
    if turns:
        yield from cta.wait_turn(w, 0)
    scores = cta.qk(w, 0)                                       # S_0 = Q K_0ᵀ
    yield cta.issued(w)                                         # the pipe has taken it
    if turns:
        cta.pass_turn(w)
    yield from cta.wait_qk(scores, w)
    yield from release(cta, w, cta.k, 0, inline_tma)
    yield from cta.softmax(w, 0, pack=not fence)                # no fence: P packed among exps
    if fence:
        yield from cta.pack(w, 0)

    for j in range(1, n):
        yield from cta.acquire(me, cta.k, j)
        yield from cta.acquire(me, cta.v, j - 1)
        if turns:
            yield from cta.wait_turn(w, j)
        scores = cta.qk(w, j)                                   # S_j = Q K_jᵀ (async)
        if rescale_early:                                       # O *= alpha_{j-1} under it
            yield cta.issued(w)
            yield from cta.rescale(w, j - 1)
        out = cta.pv(w, j - 1)                                  # O += P_{j-1} V_{j-1} (async)
        yield cta.issued(w)                                     # the pipe has taken both
        if turns:
            cta.pass_turn(w)                                    # both queued: the next WG's turn
        yield from cta.wait_qk(scores, w)                          # wgmma_wait<1>: scores only
        if not one_release:
            yield from release(cta, w, cta.k, j, inline_tma)
        if fence:
            yield from cta.softmax(w, j)                        # under P_{j-1} V_{j-1}
        yield from wait_pv(cta, w, out, j - 1, inline_tma, one_release)  # wgmma_wait<0>
        if not fence:                                           # the softmax after P·V, its
            yield from cta.softmax(w, j, pack=True)             # pack among the exps
        if not rescale_early:
            yield from cta.rescale(w, j)                        # needs P_{j-1} V_{j-1} done
        if fence:
            yield from cta.pack(w, j)                           # into the registers it read

    # the last P·V
    yield from cta.acquire(me, cta.v, n - 1)
    if turns:
        yield from cta.wait_turn(w, n)
    if rescale_early:
        yield from cta.rescale(w, n - 1)
    out = cta.pv(w, n - 1)                                      # O += P_{n-1} V_{n-1}
    yield cta.issued(w)
    if turns:
        cta.pass_turn(w)
    yield from wait_pv(cta, w, out, n - 1, inline_tma)
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    rescale_early = "rescale_early" in cta.cfg.switches
    return [consumer(cta, w, rescale_early=rescale_early) for w in range(cta.cfg.consumers)]
