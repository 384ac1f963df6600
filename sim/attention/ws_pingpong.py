"""`ws_pingpong` — `ws` plus ordered turns on the tensor core (FA3 §3.1, fig. 1).

Consumer w waits for its turn, issues Q·Kⱼᵀ, and passes the turn on once its scores are in, so the
consumers' score GEMMs run one warpgroup's after the other's instead of sharing the tensor core and
both finishing late. The rest of the loop is `ws`'s: softmax waits for the
scores, P·V waits for the softmax — no GEMM overlaps its *own* warpgroup's softmax (that is
`overlap`). This is FA3's kernel with the scheduler barriers on and intra-warpgroup overlap off.
"""
from .cta import AttentionCTA
from .ws import producer

WARP_SPECIALIZED = True
LIVE_S, LIVE_P = 1, 0


def consumer(cta: AttentionCTA, w: int):
    me = cta.wg(w)
    yield from cta.wait_q(me, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)
        yield from cta.wait_turn(w, j)                          # my turn on the tensor core
        yield cta.qk(w, j)                                      # S_j = Q K_jᵀ
        cta.pass_turn(w)                                    # scores in: the next WG's turn
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)                            # under the other WG's GEMMs
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)                                      # O += P_j V_j
        cta.release(cta.v, j)
    yield from cta.epilogue(w)


def roles(cta: AttentionCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
