"""One GEMM CTA on one SM: its A/B ring and the steps every GEMM schedule is built of.

A CTA is persistent: it walks `n_tiles` output tiles, each over `k_blocks` blocks of `block_k`.
Block (t, kb) is the CTA's `t * k_blocks + kb`-th trip through the ring, so the producer and the
consumers agree on slot and phase without talking. The costs are the attention CTA's: the same
wgmma (`max(N/2, operand bytes / 128) + wgmma_overhead_clk`), the same TMA, the same barriers.
"""
from __future__ import annotations

import math

import simpy

from ..attention.cta import make_units
from ..config import DTYPES, GemmConfig
from ..engine import MBarrier, Ring, Turns
from ..hardware import Hardware
from ..trace import Trace


class GemmCTA:
    def __init__(self, env: simpy.Environment, hw: Hardware, cfg: GemmConfig, trace: Trace,
                 n_tiles: int, k_blocks: int, cooperative: bool):
        self.env, self.hw, self.cfg, self.trace = env, hw, cfg, trace
        self.n_tiles, self.k_blocks = n_tiles, k_blocks
        self.el = DTYPES[cfg.dtype]
        # cooperative: the consumers split each tile's rows; otherwise each owns whole tiles.
        self.rows = cfg.block_m // cfg.consumers if cooperative else cfg.block_m
        units = make_units(env, hw, trace)
        self.tensor, self.fma, self.tma = units["tensor"], units["fma"], units["tma"]
        self.ab = Ring(env, "ab", cfg.stages, cfg.consumers if cooperative else 1, hw.mbarrier_clk)
        self.turns = Turns(env, cfg.consumers, hw.mbarrier_clk)
        self.cta_bar = MBarrier(env, "bar.sync", cfg.consumers, hw.mbarrier_clk)
        self._syncs = [0] * cfg.consumers

    def wg(self, w: int) -> str:
        return f"consumer{w}"

    producer_name = "producer"

    def index(self, t: int, kb: int) -> int:
        return t * self.k_blocks + kb

    # --- barriers (as AttentionCTA) ------------------------------------------------------------
    def wait(self, actor, bar, parity):
        t0 = self.env.now
        yield from bar.wait(parity)
        self.trace.wait(actor, bar.name, t0, self.env.now)

    def wait_turn(self, w: int, k: int):
        t0 = self.env.now
        yield from self.turns.wait(w, k)
        self.trace.wait(self.wg(w), "turn", t0, self.env.now)

    def sync_consumers(self, w: int):
        k, self._syncs[w] = self._syncs[w], self._syncs[w] + 1
        self.cta_bar.arrive()
        yield from self.wait(self.wg(w), self.cta_bar, k & 1)

    # --- TMA -----------------------------------------------------------------------------------
    def load(self, actor: str, i: int) -> None:
        """expect_tx, then TMA the A (block_m × block_k) and B (block_k × block_n) of block i."""
        s, _ = self.ab.slot(i)
        cfg = self.cfg
        a_bytes = cfg.block_m * cfg.block_k * self.el
        b_bytes = cfg.block_k * cfg.block_n * self.el
        self.ab.full[s].expect(a_bytes + b_bytes)
        for op, nbytes in (("load A", a_bytes), ("load B", b_bytes)):
            self.env.process(self._copy(actor, op, nbytes, self.ab.full[s], ("ab", i)))

    def _copy(self, actor, op, nbytes, bar, tile):
        yield from self.tma.run(actor, op, nbytes / self.hw.l2_bytes_per_clk_per_sm, tile=tile)
        yield self.env.timeout(self.hw.tma_latency_clk)
        bar.complete_tx(nbytes)

    def produce(self, actor: str, i: int):
        s, phase = self.ab.slot(i)
        yield from self.wait(actor, self.ab.empty[s], phase ^ 1)
        self.load(actor, i)

    def acquire(self, w: int, i: int):
        s, phase = self.ab.slot(i)
        yield from self.wait(self.wg(w), self.ab.full[s], phase)

    def release(self, i: int) -> None:
        self.ab.empty[self.ab.slot(i)[0]].arrive()

    # --- compute -------------------------------------------------------------------------------
    def mma(self, w: int, i: int):
        """Issue this warpgroup's wgmmas for block i (SS: A and B from shared memory)."""
        hw, cfg, el = self.hw, self.cfg, self.el
        n = cfg.block_n
        math_clk = n / 2 / (hw.fp8_speedup if cfg.dtype == "fp8" else 1)
        smem_bytes = 64 * 16 * el + n * 16 * el
        clk = max(math_clk, smem_bytes / hw.smem_bytes_per_clk) + hw.wgmma_overhead_clk
        count = (self.rows // 64) * math.ceil(cfg.block_k / 16)
        return self.tensor.issue(self.wg(w), "MMA", count, clk, math_clk, ("ab", i))

    def epilogue(self, w: int, t: int):
        """Accumulators → fp16 → shared memory → TMA store of this warpgroup's rows."""
        hw, cfg = self.hw, self.cfg
        elems = self.rows * cfg.block_n
        yield from self.fma.run(self.wg(w), "epilogue", elems / hw.fma_lanes_per_clk, tile=("c", t))
        yield from self.tma.run(self.wg(w), "store C", elems * self.el / hw.l2_bytes_per_clk_per_sm,
                                tile=("c", t))

    def mainloop(self, w: int, t: int, refill=None, issued_all=None):
        """K-loop of tile t. With two or more slots keep one wgmma group in flight
        (warpgroup_mma_wait<1>) and release a slot once the group that read it is done; with one
        slot there is nothing to overlap (wait<0> each block). `refill(i)` is the in-line TMA of
        the non-WS variants; `issued_all()` runs once the last block's wgmmas are queued."""
        in_flight = 1 if self.cfg.stages > 1 else 0
        pending = []
        for kb in range(self.k_blocks):
            i = self.index(t, kb)
            yield from self.acquire(w, i)
            pending.append((i, self.mma(w, i)))
            if issued_all and kb == self.k_blocks - 1:
                issued_all()
            while len(pending) > in_flight:
                yield from self._retire(pending.pop(0), refill)
        while pending:
            yield from self._retire(pending.pop(0), refill)

    def _retire(self, block, refill):
        i, group = block
        yield group
        self.release(i)
        if refill:
            yield from refill(i)
