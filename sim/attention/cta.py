"""One attention CTA on one SM: its units, its K/V ring, and the steps every schedule is built of.

The variants in this package differ only in *who* calls these steps and *when*; the steps
themselves — a TMA load, a wgmma group, a softmax — cost the same in every variant. That is what
"no per-variant fudge factors" means here.

A consumer warpgroup owns ``rows = block_m / consumers`` rows of Q. Per K/V block j it runs
S = Q Kⱼᵀ (SS wgmma: both operands in shared memory), the online softmax, and O += P Vⱼ (RS wgmma:
P from registers). The wgmma and TMA costs are `sim.cta.CTA`'s; the attention-only ones
(hardware.py says where each constant comes from):

* softmax of a rows×block_n tile: the row max, a dependent FMNMX chain and the cross-thread
  reduction (``row_reduce_clk``) — latency, no pipe held (1 FMNMX per element, +1 select on a
  masked block); then the exps on the SFU (16/clk) with the ``softmax_fma_per_elem`` FMA-pipe
  instructions per element that issue between them (scale and subtract, row sum); then
  ``softmax_stall_per_elem`` of dependency tail that occupies no unit. While the tensor core
  computes, the row max and the softmax's pipe work take ``softmax_beside_mma`` times as long.
* `rescale` (of O): one FMUL per O element, after the previous P·V has landed; `pack` (of P): its
  conversion to 16 bits for P·V (``softmax_pack_per_elem`` FMA-pipe slots per element), where the
  kernel has it.
"""
from __future__ import annotations

import simpy

from ..config import AttentionConfig
from ..cta import CTA
from ..engine import MBarrier, Ring
from ..hardware import Hardware
from ..trace import Trace

SOFTMAX_PIECES = 16      # softmax work is queued in pieces so two warpgroups share a unit fairly
# poly_exp (kernels/attention/steps.py `exp2_split`): a block's last quarter of columns is
# exponentiated on the FMA pipe (`exp2_poly`: a clamp, three adds, three FMAs of the cubic, the
# exponent's shift-and-add as one IMAD — 8 instructions an exp; Hopper has no .f32x2 pairs).
# The model charges them to the FMA pipe but not to the warps' issue slots, which it does not
# count for the softmax: it predicts +5 … +7 % at d 64 where the H100 measured −4 … −10 %
# (results/h100-attention-grid-poly-exp.json).
POLY_EXP_SHARE = 0.25
POLY_EXP_FMA = 8.0
# fa3's SASS after the Q·Kᵀ/P·V issue (results/logs/*_source.log.gz, `python -m fidelity.ledger`):
# WARPGROUP.DEPBAR for the scores, then K's release, a BAR.SYNC and a SYNCS.ARRIVE
SCORES_INSTRUCTIONS = 3


class AttentionCTA(CTA):
    def __init__(self, env: simpy.Environment, hw: Hardware, cfg: AttentionConfig, trace: Trace,
                 n_blocks: int, masked_blocks: int = 0, name: str = "", units: dict | None = None):
        super().__init__(env, hw, trace, cfg.dtype, cfg.consumers, name, units)
        self.cfg, self.n_blocks, self.masked_blocks = cfg, n_blocks, masked_blocks
        self.rows = cfg.block_m // cfg.consumers
        # K and V have rings of their own (as in FA3): K_j's slot frees as soon as Q·K_jᵀ is done,
        # while V_j is still needed for P·V.
        self.k = Ring(env, f"{name}k", cfg.stages, cfg.consumers, hw.mbarrier_clk, hw.mbarrier_probe_clk)
        self.v = Ring(env, f"{name}v", cfg.stages, cfg.consumers, hw.mbarrier_clk, hw.mbarrier_probe_clk)
        self.q_full = MBarrier(env, f"{name}q_full", 1, hw.mbarrier_clk, hw.mbarrier_probe_clk)

    def masked(self, j: int) -> bool:
        """Block j straddles the diagonal or the end of the sequence (its scores are masked)."""
        return j >= self.n_blocks - self.masked_blocks

    def live_half(self, w: int, j: int) -> bool:
        """With ``live_half``, causal: block j's right half lies right of every row of warpgroup
        w (the tile's last row on the last block's last column), so its softmax takes the left
        half alone (kernels/attention/steps.py `live_half`): warpgroup 0's on the diagonal block
        at BM = BN with two consumers."""
        cfg = self.cfg
        if "live_half" not in cfg.switches or not cfg.causal or not self.masked(j):
            return False
        first_col = cfg.block_m - (self.n_blocks - j) * cfg.block_n  # from the tile's first row
        return first_col + cfg.block_n // 2 >= (w + 1) * self.rows

    def softmax_elems(self, w: int, j: int) -> int:
        """The scores warpgroup w's softmax of block j takes (``live_half``: the left half)."""
        return self.rows * self.cfg.block_n // (2 if self.live_half(w, j) else 1)

    # --- waits (the kernel's steps of the same names) -----------------------------------------
    def wait_q(self, actor: str, phase: int):
        """The CTA's Q tile has landed (phase ``phase`` of ``q_full``)."""
        yield from self.wait(actor, self.q_full, phase)

    def wait_qk(self, scores, w: int | None = None):
        """The scores are in (the kernel's ``warpgroup_mma_wait``): `scores` is the event `qk`
        returned. Warpgroup `w`'s warps then issue the wait and K's release (DEPBAR, bar.sync,
        arrive: `SCORES_INSTRUCTIONS`) at the issue slot."""
        yield scores
        if w is not None:
            yield from self.slot.take(self.wg(w), SCORES_INSTRUCTIONS)

    # --- TMA -----------------------------------------------------------------------------------
    def load_q(self, actor: str) -> None:
        """The CTA's Q tile: read by this CTA alone, so from HBM; and at short sequences every
        SM starts a CTA at once, so at the SM's share of HBM (the S 1K Proton traces,
        results/traces/attention_fa3_s1k*.summary.json: Q lands 2.0-4.3 K clk into a CTA)."""
        hw = self.hw
        nbytes = self.cfg.block_m * self.cfg.headdim * self.el
        self.q_full.expect(nbytes)
        self.tma_copy(actor, "load Q", nbytes, self.q_full, self.tile("q", 0),
                      latency=hw.tma_hbm_latency_clk,
                      rate=min(hw.tma_rate, hw.hbm_bytes_per_clk_per_sm))

    def load(self, actor: str, ring: Ring, j: int) -> None:
        """expect_tx on ring.full[slot], then the TMA copy of block j (the caller waited empty)."""
        s, _ = ring.slot(j)
        nbytes = self.cfg.block_n * self.cfg.headdim * self.el
        ring.full[s].expect(nbytes)
        self.tma_copy(actor, f"load {ring.name[-1].upper()}", nbytes, ring.full[s], self.tile("kv", j))

    # --- tensor core ---------------------------------------------------------------------------
    def qk(self, w: int, j: int):
        """Issue S = Q Kⱼᵀ (SS); returns the event `warpgroup_mma_wait` waits on."""
        return self.wgmma(w, "QKᵀ", self.rows, self.cfg.block_n, self.cfg.headdim, True,
                          self.tile("kv", j))

    def pv(self, w: int, j: int):
        """Issue O += Pⱼ Vⱼ (RS: P from registers)."""
        return self.wgmma(w, "PV", self.rows, self.cfg.headdim, self.cfg.block_n, False,
                          self.tile("kv", j))

    # --- softmax ---------------------------------------------------------------------------
    def stretch(self) -> float:
        """How much longer the softmax's work takes right now: a computing tensor core slows the
        warps beside it (`softmax_beside_mma`: results/h200-softmax.json, h200-stall.json)."""
        return self.hw.softmax_beside_mma if self.tensor.busy else 1.0

    def pipe(self, unit, w: int, op: str, clk: float, pieces: int, j: int):
        """`clk` cycles of warpgroup w's softmax work on `unit` (the FMA pipe or the SFU); each
        piece issues once no other warpgroup's stream holds the issue slot."""
        actor = self.wg(w)
        yield from unit.run(actor, op, clk, pieces, self.tile("kv", j), stretch=self.stretch,
                            gate=(lambda: self.slot.take(actor, 0)) if self.slot.on else None)

    def stream(self, w: int, op: str, clk: float, j: int):
        """Independent FMA-pipe instructions issued back to back (O's FMULs, P's F2FPs): the
        warps hold their issue slots for the stream (`sim.engine.IssueSlot.hold`)."""
        yield from self.slot.hold(self.wg(w), self.fma.run(self.wg(w), op, clk, 1, self.tile("kv", j),
                                                            stretch=self.stretch))

    def stall(self, w: int, what: str, clk: float):
        t0 = self.env.now
        yield self.env.timeout(clk)
        self.trace.wait(self.wg(w), what, t0, self.env.now)

    def softmax(self, w: int, j: int, pack: bool = False):
        """Online softmax of block j for warpgroup w: new row max, P = exp2(S·scale − m), row sum;
        with `pack`, P's conversion to 16 bits issues among the exps (instead of `pack` after).

        The row max is a dependent chain (FMNMX after FMNMX, then the shuffles): it waits on its
        own latency and leaves the pipes to the other warps, so a second warpgroup's max runs
        beside it. The exps then keep the SFU busy and the FMA work issues between them — one
        warpgroup alone is SFU-bound (results/h200-softmax.json: 851 clk for 64×128 with the
        rescale and pack; results/h200-stall.json's SASS samples: the FMNMX stall on `wait`, the
        MUFU stream on the SFU). With ``poly_exp`` a quarter of the exps go to the FMA pipe
        (POLY_EXP_FMA instructions each)."""
        hw = self.hw
        elems = self.softmax_elems(w, j)
        masked = self.masked(j)
        yield from self.stall(w, "softmax: row max", (elems * (2 if masked else 1) / hw.fma_lanes_per_clk
                                                      + hw.row_reduce_clk) * self.stretch())
        poly = POLY_EXP_SHARE if "poly_exp" in self.cfg.switches else 0.0
        exps = self.env.process(self.pipe(self.sfu, w, "softmax: exp",
                                          elems * (1 - poly) / hw.sfu_exp_per_clk,
                                          SOFTMAX_PIECES, j))
        per_elem = (hw.softmax_fma_per_elem + (hw.softmax_pack_per_elem if pack else 0.0)
                    + poly * POLY_EXP_FMA)
        fmas = self.env.process(self.pipe(self.fma, w, "softmax: scale/sum",
                                          elems * per_elem / hw.fma_lanes_per_clk,
                                          SOFTMAX_PIECES, j))
        yield exps & fmas
        yield from self.stall(w, "softmax dependency stall", elems * hw.softmax_stall_per_elem)

    def rescale(self, w: int, j: int):
        """O *= exp2(m_old − m_new): one FMUL per accumulator element. With ``cond_rescale`` the
        kernel branches over them unless a row's max moved by more than 2^8, which on the
        benchmarks' random inputs happens in block 0 alone (never rescaled): no work here, and
        nothing charged for the kernel's decision (a reduction across the warpgroup's warps
        that runs under P·V)."""
        if "cond_rescale" in self.cfg.switches:
            return
        yield from self.stream(w, "rescale O", self.rows * self.cfg.headdim / self.hw.fma_lanes_per_clk, j)

    def pack(self, w: int, j: int):
        """P to 16 bits in P·V's register layout (F2FP, two elements an instruction)."""
        yield from self.stream(w, "pack P", self.rows * self.cfg.block_n
                               * self.hw.softmax_pack_per_elem / self.hw.fma_lanes_per_clk, j)

    def epilogue(self, w: int):
        """O /= l and to 16 bits, through this warpgroup's dead Q tile in shared memory (written,
        then read back 16 bytes a thread), and out in whole lines at the SM's share of HBM: at
        short sequences every SM writes its O at once (kernels/attention/steps.py `epilogue`;
        the S 1K traces, results/traces/attention_fa3_s1k*.summary.json: 1.6 K clk a warpgroup at
        d 128, 3.2 K at d 256)."""
        hw, actor, tile = self.hw, self.wg(w), self.tile("o", w)
        elems = self.rows * self.cfg.headdim
        yield from self.fma.run(actor, "epilogue", 2 * elems / hw.fma_lanes_per_clk, 1, tile)
        nbytes = elems * self.el
        yield from self.lsu.run(actor, "O through smem", 2 * nbytes / hw.smem_bytes_per_clk,
                                tile=tile)
        yield from self.lsu.run(actor, "store O", nbytes / hw.hbm_bytes_per_clk_per_sm, tile=tile)
