"""`ws_pingpong` GEMM — each consumer owns whole output tiles and the two take turns on the tensor
core (CUTLASS's "pingpong" kernel): consumer w runs its K-loop on its turn, passes the turn on once
its last wgmmas are queued, and stores its tile while the other's K-loop runs.

The tile is our Gluon kernel's (kernels/gemm/ws_pingpong.py): 192×128 per consumer, three row
blocks of 64 (one m64n128 accumulator each: 192 registers a thread of 240), BK 64, 4 slots.

The producer loads the tiles' blocks in turn order, so one ring serves both consumers.
"""
from .cta import GemmCTA
from .ws import producer

COOPERATIVE = False
PERSISTENT = True  # one CTA per SM walking tiles (kernels/gemm: the default launch)
WARP_SPECIALIZED = True
MIN_STAGES = 2     # as `ws`: one wgmma group in flight
DEFAULTS = {"block_m": 192, "block_n": 128, "block_k": 64, "stages": 4, "consumers": 2}


def consumer(cta: GemmCTA, w: int):
    me, n = cta.wg(w), cta.cfg.consumers
    for j, tile_id in enumerate(range(w, cta.n_tiles, n)):  # my j-th tile
        yield from cta.wait_turn(w, j)                      # my turn on the tensor core
        for ki in range(cta.k_blocks):
            it = cta.index(tile_id, ki)
            yield from cta.acquire(me, cta.ab, it)
            group = cta.mma(w, it)
            yield cta.issued(w)
            if ki > 0:
                yield from cta.wait_mma(previous)           # wgmma_wait(1): k-step it-1 is done
                cta.release(cta.ab, it - 1)
            previous = group
        cta.pass_turn(w)                                    # all my wgmmas are queued: your turn
        yield from cta.wait_mma(previous)                   # wgmma_wait(0)
        cta.release(cta.ab, it)
        yield from cta.epilogue(w, tile_id)                 # under the other's K-loop


def roles(cta: GemmCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
