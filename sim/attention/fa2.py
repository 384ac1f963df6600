"""`fa2` — FlashAttention-2 on a Hopper SM: no TMA, no wgmma, no warp specialization.

What FA2's forward does (Dao-AILab/flash-attention, csrc/flash_attn/src/: the tiles and warps in
``flash_fwd_launch_template.h``, the loop in ``flash_fwd_kernel.h`` ``compute_attn_1rowblock``,
the GEMMs in ``utils.h`` ``gemm`` / ``gemm_rs``), and what each step costs here:

* **Tiles.** Four warps a CTA; block_m × block_n = 128×128 at d 64, 128×64 at d 128, 64×64 at d
  256 on an H100/H200 (`sim/tiles.json`, table `fa2`; the d 256 rule picks 64×64 "since then we can get
  2 CTAs per SM"). One K tile and one V tile in shared memory (no ring): ``STAGES = 1``.
* **CTAs per SM** from registers and shared memory (`resident_ctas`): each thread holds O and S in
  fp32 (block_m·d/128 + block_m·block_n/128 registers, 192 / 192 / 160 at d 64 / 128 / 256) and
  more, so at most 2 CTAs of 128 threads fit the 64K-register file; smem (Q + K + V: 48 / 64 /
  96 KiB) allows 4 / 3 / 2. Two, as the `fa2_ctas_per_sm` constant says.
* **Loop** per K/V block j (FA2's order): wait for K_j (cp.async.wait_group, __syncthreads), issue
  V_j, S = Q·K_jᵀ, wait for V_j, issue K_{j+1} (it flies under the softmax and P·V), the online
  softmax and rescale of O on the same warps, P to fp16, O += P·V_j.
* **A GEMM** is its k-steps of 16: every operand fragment comes from shared memory by ldmatrix
  (each warp owns block_m/4 rows, so each warp reads its rows of Q and *all* of K and V), at the
  SM's 128 B/clk, the next k-slice's ldmatrix under the current slice's mma.sync (FA2's `gemm`
  copies slice i+1 before computing slice i; two slices of fragments in registers, so slice
  i+2's loads wait for slice i's mma.sync); mma.sync runs at `mma_sync_fraction` of the wgmma
  rate (arXiv 2402.13499). P·V's A operand, P, is already in registers.
* **Synchronous**: the warp's softmax needs its scores, so it waits for its last mma.sync to
  finish and drain (``wgmma_latency_clk``: the same tensor pipe). O's rescale in the next block
  waits likewise for this block's P·V.

* **cp.async** (K, V): the copy path the other variants use (bytes at the L2 rate, an L2 hit's
  latency), and the bytes written into shared memory through the same 128 B/clk port that
  ldmatrix reads (whitepaper: one shared-memory bandwidth, reads and writes).

Any overlap of one CTA's softmax with the other's GEMMs is the two CTAs' luck,
not a schedule. The measured peer is torch SDPA's flash backend, which is FA2
(`python -m fidelity fa2`).
"""
from ..config import BOOKKEEPING_REGS, DTYPES, AttentionConfig
from ..hardware import Hardware
from .cta import AttentionCTA

WARP_SPECIALIZED = False
LIVE_S, LIVE_P = 1, 0
CTAS_PER_SM = "fa2_ctas_per_sm"     # read from Hardware; `resident_ctas` derives it
WARPS = 4
STAGES = 1                          # one K tile and one V tile in shared memory
K_STEP = 16                         # mma.sync m16n8k16


def resident_ctas(cfg: AttentionConfig, hw: Hardware) -> int:
    """CTAs of FA2's forward one SM holds: registers (O and S in fp32 per thread, plus
    `BOOKKEEPING_REGS`, in the allocator's steps of 8) against the register file, Q + K + V
    against shared memory, 4 warps against the SM's 64."""
    threads = 32 * WARPS
    regs = (cfg.block_m * cfg.headdim + cfg.block_m * cfg.block_n) // threads + BOOKKEEPING_REGS
    regs = min(hw.max_regs_per_thread, -(-regs // 8) * 8)
    smem = (cfg.block_m + 2 * cfg.block_n) * cfg.headdim * DTYPES[cfg.dtype]
    return min(hw.regs_per_sm // (threads * regs), hw.smem_per_block // smem, 64 // WARPS)


def gemm(cta: AttentionCTA, op: str, n: int, k: int, a_smem: bool, b_rows: int, j: int):
    """One warp-synchronous GEMM of the CTA's block_m rows × n × k, k-step by k-step: ldmatrix of
    the next slice (A: the warps' own rows, when A is in shared memory; B: `b_rows` × 16 for each
    of the 4 warps) under the mma.sync of this one. Returns the last slice's done event."""
    hw, me, cfg = cta.hw, cta.wg(0), cta.cfg
    tile = cta.tile("kv", j)
    per_step = ((cfg.block_m * K_STEP if a_smem else 0) + WARPS * b_rows * K_STEP) * cta.el
    load_clk = per_step / hw.smem_bytes_per_clk
    math = 2 * cfg.block_m * n * K_STEP / hw.tensor_flop_per_clk
    steps = -(-k // K_STEP)
    yield from cta.lsu.run(me, f"{op}: ldmatrix", load_clk, tile=tile)       # slice 0
    done = []
    for i in range(steps):
        done.append(cta.tensor.issue(me, op, 1, math / hw.mma_sync_fraction, math, tile,
                                     mma_sync=True))
        if i + 1 < steps:
            if i >= 1:
                yield done[i - 1]                 # slice i+1's registers were slice i-1's
            yield from cta.lsu.run(me, f"{op}: ldmatrix", load_clk, tile=tile)
    return done[-1]


def cp_async(cta: AttentionCTA, ring, j: int):
    """FA2's cp.async of block j: the copy (`produce`), and its bytes written into shared memory
    through the same 128 B/clk port the ldmatrix reads use."""
    me = cta.wg(0)
    yield from cta.produce(me, ring, j)
    nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
    op = f"load {ring.name[-1].upper()}"                        # the palette's load K / load V
    cta.env.process(cta.lsu.run(me, op, nbytes / cta.hw.smem_bytes_per_clk, tile=cta.tile("kv", j)))


def consumer(cta: AttentionCTA):
    me, cfg = cta.wg(0), cta.cfg
    bn, d = cfg.block_n, cfg.headdim
    cta.load_q(me)
    yield from cp_async(cta, cta.k, 0)
    yield from cta.wait(me, cta.q_full, 0)
    pv_done = None
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)                     # cp.async.wait_group; __syncthreads
        yield from cp_async(cta, cta.v, j)                       # V_j flies under Q·K_jᵀ
        s_done = yield from gemm(cta, "QKᵀ", bn, d, True, bn, j)
        yield s_done                                             # mma.sync: the scores, then softmax
        cta.release(cta.k, j)
        yield from cta.acquire(me, cta.v, j)                     # FA2 waits for V before the softmax
        if j + 1 < cta.n_blocks:
            yield from cp_async(cta, cta.k, j + 1)               # K_{j+1} under softmax and P·V
        yield from cta.softmax(0, j)
        if pv_done is not None:
            yield pv_done                                        # O of the last P·V, to rescale
        yield from cta.rescale(0, j)
        yield from cta.pack(0, j)
        pv_done = yield from gemm(cta, "PV", d, bn, False, d, j)
        cta.release(cta.v, j)              # mma.sync reads registers: V's slot is free once read
    yield pv_done
    yield from cta.epilogue(0)


def roles(cta: AttentionCTA):
    return [consumer(cta)]
