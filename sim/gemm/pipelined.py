"""`pipelined` GEMM — an s-stage A/B ring issued by the compute warps themselves.

Warpgroup 0 fills the ring before the loop. After each block the consumers meet at a CTA barrier
(nobody may overwrite a slot another warpgroup still reads) and warpgroup 0 loads the block
`stages` ahead. Loads overlap the wgmmas, but every block costs a barrier round trip, and the
epilogue stalls the loads as well as the tensor core.
"""
from .cta import GemmCTA

COOPERATIVE = True
PERSISTENT = False  # one CTA per tile (kernels/gemm/pipelined.py offers no other)
WARP_SPECIALIZED = False
DEFAULTS = {"block_m": 128, "block_n": 256, "block_k": 64, "stages": 3, "consumers": 2}


def consumer(cta: GemmCTA, w: int):
    total = cta.n_tiles * cta.k_blocks
    if w == 0:
        for i in range(min(cta.cfg.stages, total)):
            cta.load(cta.wg(0), cta.ab, i)

    def refill(i):
        if i + cta.cfg.stages < total:
            yield from cta.sync_consumers(w)
            if w == 0:
                cta.load(cta.wg(0), cta.ab, i + cta.cfg.stages)

    for t in range(cta.n_tiles):
        yield from cta.mainloop(w, t, refill)
        yield from cta.epilogue(w, t)


def roles(cta: GemmCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
