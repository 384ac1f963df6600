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
DEFAULTS = {"block_m": 192, "block_n": 128, "block_k": 64, "stages": 4, "consumers": 2}


def consumer(cta: GemmCTA, w: int):
    n = cta.cfg.consumers
    for k, t in enumerate(range(w, cta.n_tiles, n)):
        yield from cta.wait_turn(w, k)                      # my K-loop's turn
        yield from cta.mainloop(w, t, issued_all=lambda: cta.turns.pass_on(w))
        yield from cta.epilogue(w, t)                       # under the other's K-loop


def roles(cta: GemmCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
