"""`ws` — warp specialization (FA3 alg. 1): a producer fills the K/V rings, consumers compute.

The producer warpgroup gives its registers away (setmaxnreg 24) and does nothing but wait for a free
slot and issue TMA. Each consumer warpgroup (setmaxnreg 240) runs the plain FlashAttention loop on
its own 64 rows. Nothing orders the consumers: they wake on the same `full` barrier, issue their
wgmmas in the same cycle, and so share the tensor core — and then the SFU — at the same time.
"""
from .cta import AttentionCTA

WARP_SPECIALIZED = True
LIVE_S, LIVE_P = 1, 0           # registers: one score tile per consumer (P overwrites S)


def producer(cta: AttentionCTA):
    me = cta.producer_name
    cta.load_q(me)
    for j in range(cta.n_blocks):
        yield from cta.produce(me, cta.k, j)                    # wait k.empty, TMA K_j → k.full
        yield from cta.produce(me, cta.v, j)                    # wait v.empty, TMA V_j → v.full


def consumer(cta: AttentionCTA, w: int):
    me = cta.wg(w)
    yield from cta.wait_q(me, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)                    # K_j landed
        yield cta.qk(w, j)                                      # S = Q K_jᵀ; wgmma wait
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)                            # the tensor core idles for this WG
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)                               # P to fp16, P·V's A operand
        yield cta.pv(w, j)                                      # O += P V_j; wgmma wait
        cta.release(cta.v, j)
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
