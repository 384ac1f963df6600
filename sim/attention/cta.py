"""One attention CTA on one SM: its units, its K/V ring, and the steps every schedule is built of.

The variants in this package differ only in *who* calls these steps and *when*; the steps
themselves — a TMA load, a wgmma group, a softmax — cost the same in every variant. That is what
"no per-variant fudge factors" means here.

A consumer warpgroup owns ``rows = block_m / consumers`` rows of Q. Per K/V block j it runs
S = Q Kⱼᵀ (SS wgmma: both operands in shared memory), the online softmax, and O += P Vⱼ (RS wgmma:
P from registers). Costs (hardware.py says where each constant comes from):

* wgmma m64nNk16: max(N/2, shared-memory operand bytes / 128 B/clk) + ``wgmma_overhead_clk`` of the
  tensor pipe; results readable ``wgmma_latency_clk`` after the last one.
* softmax of a rows×block_n tile: row max on the FMA pipe (1 FMNMX per element, +1 select on a
  masked block), the cross-thread max reduction (``row_reduce_clk``), then the exps on the SFU
  (16/clk) while the FMA pipe does the other ``softmax_fma_per_elem - 1`` instructions per element.
* rescale O: one FMUL per O element, after the previous P·V has landed.
"""
from __future__ import annotations

import math

import simpy

from ..config import DTYPES, AttentionConfig
from ..engine import MBarrier, Ring, TensorCore, Turns, Unit
from ..hardware import Hardware
from ..trace import Trace

SOFTMAX_PIECES = 16      # softmax work is queued in pieces so two warpgroups share a unit fairly


class AttentionCTA:
    def __init__(self, env: simpy.Environment, hw: Hardware, cfg: AttentionConfig, trace: Trace,
                 n_blocks: int, masked_blocks: int = 0, rows_valid: int | None = None,
                 name: str = "", units: dict | None = None):
        self.env, self.hw, self.cfg, self.trace = env, hw, cfg, trace
        self.n_blocks, self.masked_blocks = n_blocks, masked_blocks
        self.name = name
        self.rows = cfg.block_m // cfg.consumers
        self.el = DTYPES[cfg.dtype]
        units = units or make_units(env, hw, trace)
        self.tensor, self.sfu, self.fma, self.tma, self.lsu = (
            units[u] for u in ("tensor", "sfu", "fma", "tma", "lsu"))
        # K and V have rings of their own (as in FA3): K_j's slot frees as soon as Q·K_jᵀ is done,
        # while V_j is still needed for P·V.
        self.k = Ring(env, f"{name}k", cfg.stages, cfg.consumers, hw.mbarrier_clk)
        self.v = Ring(env, f"{name}v", cfg.stages, cfg.consumers, hw.mbarrier_clk)
        self.q_full = MBarrier(env, f"{name}q_full", 1, hw.mbarrier_clk)
        self.turns = Turns(env, cfg.consumers, hw.mbarrier_clk)
        # Without a producer the consumers are one loop: before a slot is refilled, every consumer
        # must be done with it, so they meet at a CTA barrier (bar.sync over the consumer warps).
        self.cta_bar = MBarrier(env, f"{name}bar.sync", cfg.consumers, hw.mbarrier_clk)
        self._syncs = [0] * cfg.consumers

    # --- names ---------------------------------------------------------------------------------
    def tile(self, what: str, j: int) -> tuple[str, int]:
        """Trace tag of block j of `what` ("kv", "q", "o"), unique per CTA on the SM."""
        return (f"{self.name}{what}", j)

    def wg(self, w: int) -> str:
        return f"{self.name}consumer{w}"

    @property
    def producer_name(self) -> str:
        return f"{self.name}producer"

    # --- barriers ------------------------------------------------------------------------------
    def wait(self, actor: str, bar: MBarrier, parity: int):
        t0 = self.env.now
        yield from bar.wait(parity)
        self.trace.wait(actor, bar.name, t0, self.env.now)

    def sync_consumers(self, w: int):
        """bar.sync over the consumer warpgroups (the k-th time for each)."""
        k, self._syncs[w] = self._syncs[w], self._syncs[w] + 1
        self.cta_bar.arrive()
        yield from self.wait(self.wg(w), self.cta_bar, k & 1)

    def wait_turn(self, w: int, k: int):
        t0 = self.env.now
        yield from self.turns.wait(w, k)
        self.trace.wait(self.wg(w), "turn", t0, self.env.now)

    # --- TMA -----------------------------------------------------------------------------------
    def tma_copy(self, actor: str, op: str, nbytes: int, bar: MBarrier, tile=None) -> None:
        """Issue one TMA copy that completes `nbytes` on `bar` (the caller did expect())."""
        def copy():
            yield from self.tma.run(actor, op, nbytes / self.hw.l2_bytes_per_clk_per_sm, tile=tile)
            yield self.env.timeout(self.hw.tma_latency_clk)
            self.trace.mark(self.env.now, actor, f"landed {op}", tile)
            bar.complete_tx(nbytes)
        self.env.process(copy())

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

    def acquire(self, actor: str, ring: Ring, j: int):
        """Consumer side: wait until block j has landed in its slot."""
        s, phase = ring.slot(j)
        yield from self.wait(actor, ring.full[s], phase)

    def release(self, ring: Ring, j: int) -> None:
        ring.empty[ring.slot(j)[0]].arrive()

    def produce(self, actor: str, ring: Ring, j: int):
        """Producer side: wait until block j's slot is free (first lap passes), then load it."""
        s, phase = ring.slot(j)
        yield from self.wait(actor, ring.empty[s], phase ^ 1)
        self.load(actor, ring, j)

    # --- tensor core ---------------------------------------------------------------------------
    def _wgmma(self, w: int, op: str, n: int, k: int, a_from_smem: bool, tile):
        """An async group of wgmma m64nNk16 over k, for this warpgroup's rows."""
        hw, el = self.hw, self.el
        math_clk = n / 2 / (hw.fp8_speedup if self.cfg.dtype == "fp8" else 1)
        smem_bytes = (64 * 16 * el if a_from_smem else 0) + n * 16 * el
        clk = max(math_clk, smem_bytes / hw.smem_bytes_per_clk) + hw.wgmma_overhead_clk
        count = (self.rows // 64) * math.ceil(k / 16)
        return self.tensor.issue(self.wg(w), op, count, clk, math_clk, tile)

    def qk(self, w: int, j: int):
        """Issue S = Q Kⱼᵀ (SS); returns the event `warpgroup_mma_wait` waits on."""
        return self._wgmma(w, "QKᵀ", self.cfg.block_n, self.cfg.headdim, True, self.tile("kv", j))

    def pv(self, w: int, j: int):
        """Issue O += Pⱼ Vⱼ (RS: P from registers)."""
        return self._wgmma(w, "PV", self.cfg.headdim, self.cfg.block_n, False, self.tile("kv", j))

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
        yield from self.tma.run(actor, "store O", nbytes / self.hw.l2_bytes_per_clk_per_sm, tile=self.tile("o", w))
        yield self.env.timeout(self.hw.tma_latency_clk)


def make_units(env, hw: Hardware, trace: Trace) -> dict:
    return {"tensor": TensorCore(env, trace, hw.wgmma_latency_clk),
            "sfu": Unit(env, "sfu", trace), "fma": Unit(env, "fma", trace),
            "tma": Unit(env, "tma", trace), "lsu": Unit(env, "lsu", trace)}
