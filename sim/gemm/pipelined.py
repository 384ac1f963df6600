"""`pipelined` GEMM — an s-stage A/B ring issued by the compute warps themselves.

Warpgroup 0 fills the ring before the loop. After each block the consumers meet at a CTA barrier
(nobody may overwrite a slot another warpgroup still reads) and warpgroup 0 loads the block
`stages` ahead. Loads overlap the wgmmas, but every block costs a barrier round trip, and the
epilogue stalls the loads as well as the tensor core.

With two or more slots a consumer keeps one wgmma group in flight (`warpgroup_mma_wait(1)`) and
releases a slot once the group that read it is done; with one slot (`sequential`) there is
nothing to overlap: it waits for each k-step's group (`warpgroup_mma_wait(0)`).
"""
from .cta import GemmCTA

COOPERATIVE = True
PERSISTENT = False  # one CTA per tile (kernels/gemm/pipelined.py offers no other)
WARP_SPECIALIZED = False
DEFAULTS = {"block_m": 128, "block_n": 256, "block_k": 64, "stages": 3, "consumers": 2}


def release(cta: GemmCTA, w: int, it: int):
    """k-step it's slot is done. No producer: every consumer meets at the CTA barrier — nobody
    may overwrite a slot another warpgroup still reads — then warpgroup 0 loads k-step
    it + stages into it."""
    nxt = it + cta.cfg.stages
    if nxt < cta.n_tiles * cta.k_blocks:
        yield from cta.sync_consumers(w)
        if w == 0:
            cta.load(cta.wg(0), cta.ab, nxt)


def consumer(cta: GemmCTA, w: int):
    me, one_slot = cta.wg(w), cta.cfg.stages == 1
    if w == 0:                                              # the prologue: fill the ring
        for it in range(min(cta.cfg.stages, cta.n_tiles * cta.k_blocks)):
            cta.load(me, cta.ab, it)
    for t in range(cta.n_tiles):
        for kb in range(cta.k_blocks):
            it = cta.index(t, kb)
            yield from cta.acquire(me, cta.ab, it)
            group = cta.mma(w, it)
            yield cta.issued(w)
            if one_slot:
                yield from cta.wait_mma(group)              # wgmma_wait(0): k-step it is done
                yield from release(cta, w, it)
            elif kb > 0:
                yield from cta.wait_mma(previous)           # wgmma_wait(1): k-step it-1 is done
                yield from release(cta, w, it - 1)
            previous = group
        if not one_slot:
            yield from cta.wait_mma(previous)               # wgmma_wait(0): the last k-step
            yield from release(cta, w, it)
        yield from cta.epilogue(w, t)


def roles(cta: GemmCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
