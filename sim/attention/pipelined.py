"""`pipelined` — s-stage K/V rings, but no producer: the compute warps issue the TMA themselves.

Warpgroup 0 fills the rings before the loop (the prologue). Each time the consumers are done with a
block they meet at a CTA barrier — nobody may overwrite a slot another warpgroup still reads — and
warpgroup 0 refills the slot with the block `stages` ahead. Loads overlap compute, but the barrier
ties the consumers together: they reach the tensor core at the same moments and their softmaxes
collide. The loop is `ws`'s with this `release` in place of the hand-back to a producer.
"""
from .cta import AttentionCTA

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 0


def prologue(cta: AttentionCTA, me: str) -> None:
    """Q, then the first `stages` blocks of K and V."""
    cta.load_q(me)
    for j in range(min(cta.cfg.stages, cta.n_blocks)):
        cta.load(me, cta.k, j)
        cta.load(me, cta.v, j)


def release(cta: AttentionCTA, w: int, ring, j: int):
    """Block j's slot is done. No producer: every consumer meets at the CTA barrier — nobody may
    overwrite a slot another warpgroup still reads — then warpgroup 0 loads block j + stages."""
    nxt = j + cta.cfg.stages
    if nxt < cta.n_blocks:
        yield from cta.sync_consumers(w)
        if w == 0:
            cta.load(cta.wg(0), ring, nxt)


def consumer(cta: AttentionCTA, w: int):
    me = cta.wg(w)
    if w == 0:
        prologue(cta, me)
    yield from cta.wait_q(me, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)                    # K_j landed
        yield cta.qk(w, j)                                      # S = Q K_jᵀ; wgmma wait
        yield from release(cta, w, cta.k, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)                                      # O += P V_j; wgmma wait
        yield from release(cta, w, cta.v, j)
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
