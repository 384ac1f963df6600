"""`sequential` — load a block, wait for it, compute, repeat: one slot per ring, refilled only once
the whole block (K and V) is done.

With one slot the next block's loads can only start after every consumer has finished P·V of this
one, so each block pays the full TMA latency with the tensor core idle.
"""
from .cta import AttentionCTA
from .pipelined import prologue, refill
from .ws import consumer as ws_consumer

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 0
STAGES = 1                      # the variant *is* the one-slot ring


def consumer(cta: AttentionCTA, w: int):
    if w == 0:
        prologue(cta, cta.wg(0))

    def after(ring, j):
        if ring is cta.v:                       # block j fully done: only now load block j + 1
            yield from refill(cta, w, cta.k, j)
            yield from refill(cta, w, cta.v, j)
    yield from ws_consumer(cta, w, refill=after)


def roles(cta: AttentionCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
