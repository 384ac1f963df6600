"""`ws` GEMM — a producer warp fills the A/B ring; two consumer warpgroups split each output tile
(CUTLASS's "cooperative" kernel: 128×256 tiles, 64 rows each, setmaxnreg 24/240).

Both consumers must release a slot before the producer refills it, and both reach the epilogue
together: while they convert and store C, the tensor core waits (the producer keeps loading).

Each consumer keeps one wgmma group in flight (kernels/gemm/ws.py: `warpgroup_mma_wait(1)`), so
a slot goes back one k-step late, once the group that read it is done; hence two slots at least.
"""
from .cta import GemmCTA

COOPERATIVE = True
PERSISTENT = True  # one CTA per SM walking tiles (kernels/gemm: the default launch)
WARP_SPECIALIZED = True
MIN_STAGES = 2     # one wgmma group in flight reads the slot before the one being filled
DEFAULTS = {"block_m": 128, "block_n": 256, "block_k": 64, "stages": 3, "consumers": 2}


def producer(cta: GemmCTA):
    """Every tile's k-steps in order: wait the slot's `empty`, expect bytes on `full`, TMA A, B."""
    for tile_id in range(cta.n_tiles):
        for k in range(cta.k_blocks):                       # k-step k (the kernel: A column k)
            yield from cta.produce(cta.producer_name, cta.ab, cta.index(tile_id, k))


def consumer(cta: GemmCTA, w: int):
    me = cta.wg(w)
    for tile_id in range(cta.n_tiles):
        for ki in range(cta.k_blocks):
            it = cta.index(tile_id, ki)                     # the ring's k-step count
            yield from cta.acquire(me, cta.ab, it)          # wait full: A, B of k-step it landed
            group = cta.mma(w, it)                          # wgmma (async)
            yield cta.issued(w)                             # queued: my next instruction
            if ki > 0:
                yield from cta.wait_mma(previous)           # wgmma_wait(1): k-step it-1 is done
                cta.release(cta.ab, it - 1)                 # its slot back to the producer
            previous = group
        yield from cta.wait_mma(previous)                   # wgmma_wait(0): the last k-step
        cta.release(cta.ab, it)
        yield from cta.epilogue(w, tile_id)


def roles(cta: GemmCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
