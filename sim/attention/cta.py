"""One attention CTA on one SM: its units, its K/V ring, and the steps every schedule is built of.

The variants in this package differ only in *who* calls these steps and *when*; the steps
themselves — a TMA load, a wgmma group, a softmax — cost the same in every variant. That is what
"no per-variant fudge factors" means here.

A consumer warpgroup owns ``rows = block_m / consumers`` rows of Q. Per K/V block j it runs
S = Q Kⱼᵀ (SS wgmma: both operands in shared memory), the online softmax, and O += P Vⱼ (RS wgmma:
P from registers). The wgmma and TMA costs are `sim.cta.CTA`'s; the attention-only ones
(hardware.py says where each constant comes from):

* softmax of a rows×block_n tile, one dependent chain: row max on the FMA pipe (1 FMNMX per
  element, +1 select on a masked block), the cross-thread max reduction (``row_reduce_clk``), the
  exps on the SFU (16/clk), the other ``softmax_fma_per_elem - 1`` FMA-pipe instructions per
  element, and ``softmax_stall_per_elem`` of dependency stalls that occupy no unit.
* rescale O: one FMUL per O element, after the previous P·V has landed.
"""
from __future__ import annotations

import simpy

from ..config import AttentionConfig
from ..cta import CTA
from ..engine import MBarrier, Ring
from ..hardware import Hardware
from ..trace import Trace

SOFTMAX_PIECES = 16      # softmax work is queued in pieces so two warpgroups share a unit fairly


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

    # --- TMA -----------------------------------------------------------------------------------
    def load_q(self, actor: str) -> None:
        nbytes = self.cfg.block_m * self.cfg.headdim * self.el
        self.q_full.expect(nbytes)
        self.tma_copy(actor, "load Q", nbytes, self.q_full, self.tile("q", 0))

    def load(self, actor: str, ring: Ring, j: int) -> None:
        """expect_tx on ring.full[slot], then the TMA copy of block j (the caller waited empty)."""
        s, _ = ring.slot(j)
        nbytes = self.cfg.block_n * self.cfg.headdim * self.el
        ring.full[s].expect(nbytes)
        self.tma_copy(actor, f"load {ring.name[-1].upper()}", nbytes, ring.full[s], self.tile("kv", j))

    def produce(self, actor: str, ring: Ring, j: int):
        """Producer side: wait for block j's slot to be free, then load it."""
        yield from super().produce(actor, ring, j, self.load)

    # --- tensor core ---------------------------------------------------------------------------
    def qk(self, w: int, j: int):
        """Issue S = Q Kⱼᵀ (SS); returns the event `warpgroup_mma_wait` waits on."""
        return self.wgmma(w, "QKᵀ", self.rows, self.cfg.block_n, self.cfg.headdim, True,
                          self.tile("kv", j))

    def pv(self, w: int, j: int):
        """Issue O += Pⱼ Vⱼ (RS: P from registers)."""
        return self.wgmma(w, "PV", self.rows, self.cfg.headdim, self.cfg.block_n, False,
                          self.tile("kv", j))

    # --- softmax -------------------------------------------------------------------------------
    def softmax(self, w: int, j: int):
        """Online softmax of block j for warpgroup w: new row max, P = exp2(S·scale − m), row sum.

        One dependent chain per row — max, then exp, then sum and pack — so within a warpgroup the
        FMA work and the exps follow each other; they overlap only *another* warpgroup's work."""
        hw, actor, tile = self.hw, self.wg(w), self.tile("kv", j)
        elems = self.rows * self.cfg.block_n
        masked = j >= self.n_blocks - self.masked_blocks
        yield from self.fma.run(actor, "softmax: max", elems * (2 if masked else 1) / hw.fma_lanes_per_clk,
                                SOFTMAX_PIECES, tile)
        yield self.env.timeout(hw.row_reduce_clk)
        yield from self.sfu.run(actor, "softmax: exp", elems / hw.sfu_exp_per_clk, SOFTMAX_PIECES, tile)
        yield from self.fma.run(actor, "softmax: scale/sum/pack",
                                elems * (hw.softmax_fma_per_elem - 1) / hw.fma_lanes_per_clk,
                                SOFTMAX_PIECES, tile)
        t0 = self.env.now
        yield self.env.timeout(elems * hw.softmax_stall_per_elem)
        self.trace.wait(actor, "softmax dependency stall", t0, self.env.now)

    def rescale_o(self, w: int, j: int):
        """O *= exp2(m_old − m_new): one FMUL per accumulator element."""
        yield from self.fma.run(self.wg(w), "rescale O", self.rows * self.cfg.headdim / self.hw.fma_lanes_per_clk,
                                1, self.tile("kv", j))

    def epilogue(self, w: int):
        """O /= l, write LSE, convert, stage in smem and TMA-store this warpgroup's rows."""
        actor = self.wg(w)
        yield from self.fma.run(actor, "epilogue", 2 * self.rows * self.cfg.headdim / self.hw.fma_lanes_per_clk,
                                1, self.tile("o", w))
        nbytes = self.rows * self.cfg.headdim * self.el
        yield from self.tma.run(actor, "store O", nbytes / self.hw.tma_rate, tile=self.tile("o", w))
        yield self.env.timeout(self.hw.tma_latency_clk)
