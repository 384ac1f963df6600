"""`sequential` — load a block, wait for it, compute, repeat: one slot per ring, refilled only once
the whole block (K and V) is done.

With one slot the next block's loads can only start after every consumer has finished P·V of this
one, so each block pays the full TMA latency with the tensor core idle. The loop is `pipelined`'s
with both releases moved after P·V.
"""
from .cta import AttentionCTA
from .pipelined import prologue, release

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 0
STAGES = 1                      # the variant *is* the one-slot ring


def consumer(cta: AttentionCTA, w: int):
    me = cta.wg(w)
    if w == 0:
        prologue(cta, me)
    yield from cta.wait_q(me, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)                    # K_j landed
        yield cta.qk(w, j)                                      # S = Q K_jᵀ; wgmma wait
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)                                      # O += P V_j; wgmma wait
        yield from release(cta, w, cta.k, j)                    # block j done: only now load
        yield from release(cta, w, cta.v, j)                    # block j + 1 into the slots
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
