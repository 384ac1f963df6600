"""`fa2` — FlashAttention-2 on a Hopper SM: no TMA, no wgmma, no warp specialization.

Four warps per CTA, two CTAs per SM (FA2's d128 forward keeps 2 resident). The warps load with
cp.async — V_j while they compute Q·K_jᵀ, K_{j+1} while they compute P·V_j — and compute with
mma.sync: synchronous (the warp waits for each product), at the pre-Hopper tensor rate
(`mma_sync_fraction` of the wgmma peak), after reading every operand fragment from shared memory
with ldmatrix (each warp reads all of K and V). Any overlap of one CTA's softmax with the other's
GEMMs is luck, not schedule. The measured peer is torch SDPA's flash backend, which is FA2.
"""
from .cta import AttentionCTA

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 0
CTAS_PER_SM = "fa2_ctas_per_sm"     # read from Hardware
WARPS = 4


def mma_sync(cta: AttentionCTA, op: str, n: int, k: int, smem_bytes: int, j: int):
    """One warp-synchronous GEMM of the CTA's rows: ldmatrix the fragments, then mma.sync."""
    hw, me = cta.hw, cta.wg(0)
    yield from cta.lsu.run(me, f"{op}: ldmatrix", smem_bytes / hw.smem_bytes_per_clk, tile=cta.tile("kv", j))
    math = 2 * cta.cfg.block_m * n * k / hw.tensor_flop_per_clk
    yield cta.tensor.issue(me, op, 1, math / hw.mma_sync_fraction, math, cta.tile("kv", j),
                           mma_sync=True)


def consumer(cta: AttentionCTA):
    me, cfg, el = cta.wg(0), cta.cfg, cta.el
    bn, d, bm = cfg.block_n, cfg.headdim, cfg.block_m
    cta.load_q(me)
    yield from cta.produce(me, cta.k, 0)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)                     # cp.async.wait_group; __syncthreads
        yield from cta.produce(me, cta.v, j)                     # V_j flies under Q·K_jᵀ
        yield from mma_sync(cta, "QKᵀ", bn, d, (bm * d + WARPS * bn * d) * el, j)
        cta.release(cta.k, j)
        yield from cta.softmax(0, j)
        yield from cta.rescale(0, j)
        yield from cta.pack(0, j)
        yield from cta.acquire(me, cta.v, j)
        if j + 1 < cta.n_blocks:
            yield from cta.produce(me, cta.k, j + 1)             # K_{j+1} flies under P·V_j
        yield from mma_sync(cta, "PV", d, bn, WARPS * bn * d * el, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(0)


def roles(cta: AttentionCTA):
    return [consumer(cta)]
