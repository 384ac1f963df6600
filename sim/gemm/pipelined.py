"""`pipelined` GEMM — an s-stage A/B ring issued by the compute warps themselves.

Its steps are `kernels/gemm/pipelined.py`'s, in its order: warpgroup 0 fills the ring before the
loop; each k-step then waits for the one before (`warpgroup_mma_wait(1)`) and `release`s that
one's slot: if a k-step is left for it, every consumer meets at the CTA barrier (nobody may
overwrite a slot another warpgroup still reads) and warpgroup 0 loads it. Loads overlap the
wgmmas, but every refill costs a barrier round trip, and the epilogue stalls the loads as well
as the tensor core. One CTA per tile, as the kernel: a CTA's tiles run one after another, each
with its own prologue and drain.
"""
from .cta import GemmCTA

COOPERATIVE = True
PERSISTENT = False  # one CTA per tile (kernels/gemm/pipelined.py offers no other)
WARP_SPECIALIZED = False
DEFAULTS = {"block_m": 128, "block_n": 256, "block_k": 64, "stages": 3, "consumers": 2}


def release(cta: GemmCTA, w: int, ring, t: int, i: int):
    """Done with tile t's k-step i (-1: none yet): if the tile has a k-step i + stages, once
    every warpgroup is done with the slot (the CTA barrier) warpgroup 0 loads it there."""
    j = i + cta.cfg.stages
    if i >= 0 and j < cta.k_blocks:
        yield from cta.sync_consumers(w)
        if w == 0:
            cta.load(cta.wg(0), ring, cta.index(t, j))


def consumer(cta: GemmCTA, w: int, t: int):
    """Tile t's k-steps: the prologue, then acquire, mma, the wait for the k-step before and its
    release; the last k-step's wait after the loop. Returns once the accumulators are done."""
    me = cta.wg(w)
    for i in range(cta.cfg.stages):                         # the prologue: the whole ring
        if w == 0 and i < cta.k_blocks:
            cta.load(me, cta.ab, cta.index(t, i))
    previous = None
    for i in range(cta.k_blocks):
        yield from cta.acquire(me, cta.ab, cta.index(t, i))
        group = cta.mma(w, cta.index(t, i))
        yield cta.issued(w)
        yield from cta.wait_mma(previous)                   # wgmma_wait(1): k-step i-1 is done
        yield from release(cta, w, cta.ab, t, i - 1)
        previous = group
    yield from cta.wait_mma(previous)                       # wgmma_wait(0): the last k-step


def tiles(cta: GemmCTA, w: int):
    """The kernel's body, a tile at a time: the consumer's k-steps, then the epilogue."""
    for t in range(cta.n_tiles):
        yield from consumer(cta, w, t)
        yield from cta.epilogue(w, t)


def roles(cta: GemmCTA):
    return [tiles(cta, w) for w in range(cta.cfg.consumers)]
