"""`pipelined` — s-stage K/V rings, but no producer: the compute warps issue the TMA themselves.

Warpgroup 0 fills the rings before the loop (the prologue). Each time the consumers are done with a
block they meet at a CTA barrier — nobody may overwrite a slot another warpgroup still reads — and
warpgroup 0 refills the slot with the block `stages` ahead. Loads overlap compute, but the barrier
ties the consumers together: they reach the tensor core at the same moments and their softmaxes
collide.
"""
from .cta import AttentionCTA
from .ws import consumer as ws_consumer

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 0


def prologue(cta: AttentionCTA, me: str) -> None:
    cta.load_q(me)
    for j in range(min(cta.cfg.stages, cta.n_blocks)):
        cta.load(me, cta.k, j)
        cta.load(me, cta.v, j)


def refill(cta: AttentionCTA, w: int, ring, j: int):
    """Block j of `ring` is done: all consumers meet at the CTA barrier — so nobody still reads
    the slot — then warpgroup 0 loads block j + stages into it."""
    nxt = j + cta.cfg.stages
    if nxt < cta.n_blocks:
        yield from cta.sync_consumers(w)
        if w == 0:
            cta.load(cta.wg(0), ring, nxt)


def consumer(cta: AttentionCTA, w: int):
    if w == 0:
        prologue(cta, cta.wg(0))
    yield from ws_consumer(cta, w, refill=lambda ring, j: refill(cta, w, ring, j))


def roles(cta: AttentionCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
