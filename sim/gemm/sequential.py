"""`sequential` GEMM — load a k-step, wait, multiply, repeat (`kernels/gemm/sequential.py`): one
slot, so every k-step's TMA latency is paid with the tensor core idle, and every wgmma with the
copy engine idle. Warpgroup 0 loads the first k-step before the loop and each next one once
both warpgroups are done with the slot (the CTA barrier)."""
from . import pipelined
from .cta import GemmCTA

COOPERATIVE = True
PERSISTENT = pipelined.PERSISTENT
WARP_SPECIALIZED = False
DEFAULTS = dict(pipelined.DEFAULTS, stages=1)
STAGES = 1


def consumer(cta: GemmCTA, w: int):
    me, n = cta.wg(w), cta.n_tiles * cta.k_blocks
    if w == 0:
        cta.load(me, cta.ab, 0)
    for t in range(cta.n_tiles):
        for kb in range(cta.k_blocks):
            it = cta.index(t, kb)
            yield from cta.acquire(me, cta.ab, it)          # wait full[0]: tensor cores idle
            group = cta.mma(w, it)                          # synchronous: issue, then its wait
            yield cta.issued(w)
            yield from cta.wait_mma(group)
            if it + 1 < n:                                  # both have read the slot: refill it
                yield from cta.sync_consumers(w)
                if w == 0:
                    cta.load(me, cta.ab, it + 1)
        yield from cta.epilogue(w, t)


def roles(cta: GemmCTA):
    return [consumer(cta, w) for w in range(cta.cfg.consumers)]
