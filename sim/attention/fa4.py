"""`fa4` — FlashAttention-4's forward on Blackwell (arXiv 2603.05451; its public code,
flash_attn/cute/flash_fwd_sm100.py in Dao-AILab/flash-attention). Needs tensor memory: the `b200`
preset.

The roles, each a plain generator as the kernel's warps are::

    load warp           Q (both tiles), then K_j, V_j into one ring of shared-memory stages
    MMA warp            one thread issues every tcgen05.mma (128 × N each, accumulator in TMEM):
                        for j: for tile s in 0, 1:  [O_s += P_s V_{j-1}]; S_s = Q_s K_jᵀ
    softmax WG s        one row per thread, S_s from TMEM: row max (no shuffles: the row is its
                        own), the exps (MUFU.EX2, and some as a polynomial on the FMA pipe), P_s
                        back into TMEM in place of S_s, the row sum
    correction WG       O_s *= exp2(m_old − m_new) in TMEM once the softmax has the new row max,
                        before P_s V_j may add to O_s; the epilogue at the end

S_s and P_s share tile s's TMEM columns, so the MMA warp issues S_s of block j only after
P_s V_{j-1} (the tensor pipe runs its MMAs in order); while softmax WG 0 works on S_0, the tensor
core runs tile 1's MMAs — the two Q tiles take the place of FA3's two pingponged warpgroups.

Where FA4 runs a CTA pair (`sim.config.fa4_cta_pair`: d 128, not causal), each MMA is M 256 over
the two SMs of a TPC (tcgen05 `cta_group::2`), 128 rows on each; the model runs one SM of the
pair, the other doing the same at the same time. What changes for that SM: each CTA loads half of
every K and V block and holds half in shared memory (the MMA reads the other half from the peer),
so its copies and operand reads halve and its ring has twice the stages; and the leader's MMA warp
waits on barriers that count both CTAs' arrivals while its commits arrive on both CTAs' barriers
(`flash_fwd_sm100.py`: the consumer counts × `cta_group_size`). So the pair's half of every
hand-off — S full to its softmax, its P and its rescaled O back, the K/V ring — crosses the
SM-to-SM network and lands ``sm_pair_hop_clk`` later: the barriers the model's SM waits on wake
that much later.

FA4's moves, each a switch (`sim.config.FA4_SWITCHES`; plain `fa4` has them all):

* the correction warpgroup (``no_correction_wg``: the softmax warpgroup rescales O itself, after
  its row max, before its exps);
* conditional rescaling (``no_conditional_rescale``: O is rescaled at every block after the
  first). FA4 skips the rescale unless the row max grew by more than 2^8 (its rescale_threshold
  8.0 for 16-bit inputs); the model's scores are i.i.d., so after block 0 it never does — the
  best case for the move;
* part of the exps as a cubic polynomial on the FMA pipe beside MUFU.EX2 (``no_poly_exp``: all on
  MUFU). Which exps: FA4's rule (`poly_fraction`).
* the CTA pair (``no_cta_pair``: one CTA per MMA where FA4 pairs two).

Costs, each from hardware.py (and docs/constants.md) or named here: an MMA its math
(2·128·N·16 FLOP at ``tensor_flop_per_clk``, at least its shared-memory operand bytes at
``smem_bytes_per_clk``), done ``wgmma_latency_clk`` after its last instruction; tcgen05.ld/st at
``tmem_bytes_per_clk``; the exps at ``sfu_exp_per_clk``; FP32 adds, muls and FMAs at
``fma_lanes_per_clk`` × ``fp32_pack`` elements a clock. The MMAs read their operands from shared
and tensor memory and write tensor memory, never the register file, so a busy tensor core does
not slow the softmax beside it (no `softmax_beside_mma` stretch).
"""
from __future__ import annotations

from ..config import check_fa4, fa4_cta_pair
from ..engine import MBarrier, Ring, Unit
from .cta import SOFTMAX_PIECES, AttentionCTA

WARP_SPECIALIZED = True
LIVE_S = LIVE_P = 0             # S and P live in tensor memory, not registers
MMA_M = 128                     # tcgen05.mma's M for one CTA (PTX ISA, "tcgen05 MMA shapes")
# FMA-pipe slots per emulated exp: FA4's polynomial does, per pair of elements, one packed
# round-down add, two packed subtractions and three packed FMAs (Horner's rule, degree 3) — six
# .f32x2 instructions for two elements (flash_attn/cute/utils.py `ex2_emulation_2`); its clamp
# (FMNMX) and the exponent's shift and add run on the integer pipe, which the model does not
# have as a unit (so they cost nothing here).
POLY_FMA_SLOTS = 3.0
# FA4's rule for which exps go to the polynomial (flash_attn/cute/softmax.py
# `apply_exp2_convert`, flash_fwd_sm100.py's defaults for one CTA): a thread's row in fragments
# of 32, pairs k = 0, 2, ..., 30; in fragments 1 .. last-1 the pairs with k mod 10 >= 10 − 4.
POLY_FREQ, POLY_RES, POLY_START, POLY_FRAGMENT = 10, 4, 1, 32


def check(cfg, hw):
    return check_fa4(cfg, hw)


def poly_fraction(block_n: int) -> float:
    """The share of a row's exps FA4 computes as a polynomial (3/16 at block_n 128)."""
    frags = block_n // POLY_FRAGMENT
    emulated = sum(1 for j in range(POLY_START, frags - 1) for k in range(0, POLY_FRAGMENT, 2)
                   if k % POLY_FREQ >= POLY_FREQ - POLY_RES)
    return 2 * emulated / block_n


class FA4CTA:
    """FA4's state beside the plain attention CTA's units and Q: the K/V ring (one for both, freed
    by the MMA warp), tensor memory, and the barriers of the TMEM hand-offs per Q tile."""

    def __init__(self, cta: AttentionCTA):
        self.cta, env, hw = cta, cta.env, cta.hw
        self.n, self.sw = cta.n_blocks, cta.cfg.switches
        self.pair = 2 if fa4_cta_pair(cta.cfg) else 1       # CTAs per MMA
        wake = hw.mbarrier_clk + (hw.sm_pair_hop_clk if self.pair == 2 else 0.0)
        self.kv = Ring(env, f"{cta.name}kv", cta.cfg.stages, 1, wake, hw.mbarrier_probe_clk)
        self.tmem = Unit(env, "tmem", cta.trace)

        def bars(what):
            return [MBarrier(env, f"{cta.name}{what}[{s}]", 1, wake) for s in (0, 1)]
        self.s_full, self.p_full, self.stats, self.o_ready, self.o_full = (
            bars(w) for w in ("s_full", "p_full", "stats", "o_ready", "o_full"))
        self.poly = 0.0 if "no_poly_exp" in self.sw else poly_fraction(cta.cfg.block_n)
        # The K/V bytes this CTA's copies write into shared memory per block, spread evenly over
        # the block's MMA instructions (both tiles' QKᵀ, d/16 each, and P·V, block_n/16 each):
        # the copies land beside the MMAs and take the same port (the model has no finer timing
        # for where a copy's writes fall).
        d, bn = cta.cfg.headdim, cta.cfg.block_n
        self.copy_share = (2 * bn * d * cta.el / self.pair) / (2 * (d + bn) // 16)

    # --- names -----------------------------------------------------------------------------------
    def softmax_name(self, s: int) -> str:
        return f"{self.cta.name}softmax{s}"

    @property
    def correction_wg(self) -> bool:
        return "no_correction_wg" not in self.sw

    def rescales(self, j: int) -> bool:
        """Is O rescaled after block j's row max? Always (j > 0) without conditional rescaling;
        with it, never: the model's i.i.d. scores never lift a row max past FA4's threshold."""
        return j > 0 and "no_conditional_rescale" in self.sw

    # --- the load warp -------------------------------------------------------------------------
    def load_kv(self, actor: str, pos: int):
        """K_j at ring position 2j, V_j at 2j + 1: wait the slot free, expect its bytes, copy."""
        cta, (s, phase) = self.cta, self.kv.slot(pos)
        yield from cta.wait(actor, self.kv.empty[s], phase ^ 1)
        nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el // self.pair    # this CTA's share
        self.kv.full[s].expect(nbytes)
        cta.tma_copy(actor, "load V" if pos % 2 else "load K", nbytes, self.kv.full[s],
                     cta.tile("kv", pos // 2))

    # --- the tensor core ------------------------------------------------------------------------
    def mma(self, op: str, n: int, k: int, a_from_smem: bool, j: int):
        """Issue tcgen05.mma 128 × n × k (k/16 instructions) from the MMA warp — this SM's 128 rows
        of it in a pair, B read half from each SM's shared memory — and return its done event.
        Shared memory has one port: an instruction takes its math, or its operand bytes and its
        share of the K/V copies' writes at the port's rate if that is longer."""
        cta, hw = self.cta, self.cta.hw
        math = 2 * MMA_M * n * 16 / hw.tensor_flop_per_clk
        operands = ((MMA_M * 16 * cta.el) if a_from_smem else 0) + n * 16 * cta.el / self.pair
        clk = max(math, (operands + self.copy_share) / hw.smem_bytes_per_clk) + hw.wgmma_overhead_clk
        return cta.tensor.issue(f"{cta.name}mma", op, k // 16, clk, math, cta.tile("kv", j))

    def commit(self, done, bar: MBarrier):
        """tcgen05.commit: `bar` gets an arrive once the MMAs before it are done."""
        done.callbacks.append(lambda _: bar.arrive())

    # --- tensor memory and the softmax's pipes ---------------------------------------------------
    def tmem_move(self, actor: str, op: str, nbytes: float, j: int):
        yield from self.tmem.run(actor, op, nbytes / self.cta.hw.tmem_bytes_per_clk, 1,
                                 self.cta.tile("kv", j))

    def fma(self, actor: str, op: str, slots: float, j: int, pieces: int = SOFTMAX_PIECES):
        yield from self.cta.fma.run(actor, op, slots / self.cta.hw.fma_lanes_per_clk, pieces,
                                    self.cta.tile("kv", j))

    def rescale(self, actor: str, j: int):
        """O_s *= alpha in TMEM: load it, one packed FMUL per element, store it back."""
        cta = self.cta
        elems = MMA_M * cta.cfg.headdim
        yield from self.tmem_move(actor, "tmem load O", 4 * elems, j)
        yield from self.fma(actor, "rescale O", elems / cta.hw.fp32_pack, j, 1)
        yield from self.tmem_move(actor, "tmem store O", 4 * elems, j)


# --- the roles ------------------------------------------------------------------------------------
def load(f: FA4CTA):
    me = f"{f.cta.name}load"
    f.cta.load_q(me)
    for j in range(f.n):
        yield from f.load_kv(me, 2 * j)
        yield from f.load_kv(me, 2 * j + 1)


def mma(f: FA4CTA):
    """FA4's order per block j: wait V_{j-1}; tile 0's P·V; wait K_j; tile 0's QKᵀ; tile 1's
    P·V (V_{j-1}'s slot back when it is done); tile 1's QKᵀ (K_j's slot back)."""
    cta, me = f.cta, f"{f.cta.name}mma"
    d, bn = cta.cfg.headdim, cta.cfg.block_n
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(f.n + 1):
        if j > 0:
            yield from cta.acquire(me, f.kv, 2 * j - 1)         # V_{j-1} landed
        for s in (0, 1):
            if j > 0:
                yield from cta.wait(me, f.p_full[s], (j - 1) & 1)   # P_s of block j-1 in TMEM
                yield from cta.wait(me, f.o_ready[s], (j - 1) & 1)  # O_s rescaled for it
                pv = f.mma("O += PV", d, bn, False, j - 1)          # O_s += P_s V_{j-1} (P: TMEM)
                if s == 1:
                    f.commit(pv, f.kv.empty[f.kv.slot(2 * j - 1)[0]])   # V_{j-1}'s slot back
                if j == f.n:
                    f.commit(pv, f.o_full[s])
            if j < f.n:
                if s == 0:
                    yield from cta.acquire(me, f.kv, 2 * j)         # K_j landed
                qk = f.mma("S = QKᵀ", bn, d, True, j)               # S_s = Q_s K_jᵀ
                f.commit(qk, f.s_full[s])
                if s == 1:
                    f.commit(qk, f.kv.empty[f.kv.slot(2 * j)[0]])   # K_j's slot back


def softmax(f: FA4CTA, s: int):
    """Softmax warpgroup s, one row of Q tile s per thread."""
    cta, hw, me = f.cta, f.cta.hw, f.softmax_name(s)
    bn = cta.cfg.block_n
    elems = MMA_M * bn
    for j in range(f.n):
        yield from cta.wait(me, f.s_full[s], j & 1)
        yield from f.tmem_move(me, "tmem load S", 4 * elems, j)
        t0 = cta.env.now                                    # row max: FMNMX along the thread's row
        yield cta.env.timeout(elems * (2 if cta.masked(j) else 1) / hw.fma_lanes_per_clk)
        cta.trace.wait(me, "softmax: row max", t0, cta.env.now)
        if f.correction_wg:
            f.stats[s].arrive()                             # the row max to the correction WG
        else:
            if f.rescales(j):
                yield from f.rescale(me, j)
            f.o_ready[s].arrive()
        exps = cta.env.process(cta.sfu.run(me, "softmax: exp", elems * (1 - f.poly)
                                           / hw.sfu_exp_per_clk, SOFTMAX_PIECES, cta.tile("kv", j)))
        # scale and subtract, packed; P to 16 bits (hardware.py `softmax_pack_per_elem`)
        fmas = cta.env.process(f.fma(me, "softmax: scale/sum",
                                     elems * (1 / hw.fp32_pack + hw.softmax_pack_per_elem), j))
        procs = [exps, fmas]
        if f.poly:
            procs.append(cta.env.process(f.fma(me, "softmax: exp (polynomial)",
                                               elems * f.poly * POLY_FMA_SLOTS, j)))
        yield cta.env.all_of(procs)
        yield from f.tmem_move(me, "tmem store P", 2 * elems, j)
        f.p_full[s].arrive()
        yield from f.fma(me, "softmax: scale/sum", elems / hw.fp32_pack, j)    # the row sum
    if not f.correction_wg:
        yield from epilogue(f, s, me)


def correction(f: FA4CTA):
    me = f"{f.cta.name}correction"
    for j in range(f.n):
        for s in (0, 1):
            yield from f.cta.wait(me, f.stats[s], j & 1)
            if f.rescales(j):
                yield from f.rescale(me, j)
            f.o_ready[s].arrive()
    for s in (0, 1):
        yield from epilogue(f, s, me)


def epilogue(f: FA4CTA, s: int, me: str):
    """O_s from TMEM once its last P·V is done, O /= l, to 16 bits, out through shared memory."""
    cta = f.cta
    yield from cta.wait(me, f.o_full[s], 0)
    yield from f.tmem_move(me, "tmem load O", 4 * MMA_M * cta.cfg.headdim, f.n - 1)
    elems = MMA_M * cta.cfg.headdim
    tile = cta.tile("o", s)
    yield from cta.fma.run(me, "epilogue", 2 * elems / cta.hw.fma_lanes_per_clk, 1, tile)
    yield from cta.lsu.run(me, "O through smem", 2 * elems * cta.el / cta.hw.smem_bytes_per_clk,
                           tile=tile)
    yield from cta.lsu.run(me, "store O", elems * cta.el / cta.hw.hbm_bytes_per_clk_per_sm,
                           tile=tile)


def roles(cta: AttentionCTA):
    f = FA4CTA(cta)
    out = [load(f), mma(f), softmax(f, 0), softmax(f, 1)]
    return out + ([correction(f)] if f.correction_wg else [])
