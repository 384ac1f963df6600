"""`ws` GEMM — a producer warp fills the A/B ring; two consumer warpgroups split each output tile
(CUTLASS's "cooperative" kernel: 128×256 tiles, 64 rows each, setmaxnreg 24/240).

Both consumers must release a slot before the producer refills it, and both reach the epilogue
together: while they convert and store C, the tensor core waits (the producer keeps loading).
"""
from .cta import GemmCTA

COOPERATIVE = True
PERSISTENT = True  # one CTA per SM walking tiles (kernels/gemm: the default launch)
WARP_SPECIALIZED = True
DEFAULTS = {"block_m": 128, "block_n": 256, "block_k": 64, "stages": 3, "consumers": 2}


def producer(cta: GemmCTA):
    for t in range(cta.n_tiles):
        for kb in range(cta.k_blocks):
            yield from cta.produce(cta.producer_name, cta.ab, cta.index(t, kb), cta.load)


def consumer(cta: GemmCTA, w: int):
    for t in range(cta.n_tiles):
        yield from cta.mainloop(w, t)
        yield from cta.epilogue(w, t)


def roles(cta: GemmCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
