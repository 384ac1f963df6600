"""One GEMM CTA on one SM: its A/B ring and the steps every GEMM schedule is built of (`load`,
`mma`, `epilogue`); the loops that call them are written out in each variant's module.

A CTA is persistent: it walks `n_tiles` output tiles, each over `k_blocks` blocks of `block_k`.
Block (t, kb) is the CTA's `t * k_blocks + kb`-th trip through the ring, so the producer and the
consumers agree on slot and phase without talking. The wgmma, TMA and barrier costs are
`sim.cta.CTA`'s — the same the attention schedules pay.
"""
from __future__ import annotations

import simpy

from ..config import GemmConfig
from ..cta import CTA
from ..engine import Ring
from ..hardware import Hardware
from ..trace import Trace


class GemmCTA(CTA):
    def __init__(self, env: simpy.Environment, hw: Hardware, cfg: GemmConfig, trace: Trace,
                 n_tiles: int, k_blocks: int, cooperative: bool):
        super().__init__(env, hw, trace, cfg.dtype, cfg.consumers)
        self.cfg, self.n_tiles, self.k_blocks = cfg, n_tiles, k_blocks
        # cooperative: the consumers split each tile's rows; otherwise each owns whole tiles.
        self.rows = cfg.block_m // cfg.consumers if cooperative else cfg.block_m
        self.ab = Ring(env, "ab", cfg.stages, cfg.consumers if cooperative else 1, hw.mbarrier_clk,
                       hw.mbarrier_probe_clk)

    def index(self, t: int, kb: int) -> int:
        return t * self.k_blocks + kb

    # --- TMA -----------------------------------------------------------------------------------
    def load(self, actor: str, ring: Ring, i: int) -> None:
        """expect_tx, then TMA the A (block_m × block_k) and B (block_k × block_n) of block i."""
        s, _ = ring.slot(i)
        cfg = self.cfg
        a_bytes = cfg.block_m * cfg.block_k * self.el
        b_bytes = cfg.block_k * cfg.block_n * self.el
        ring.full[s].expect(a_bytes + b_bytes)
        lat = self.hw.tma_hbm_latency_clk                 # operands stream from HBM
        self.tma_copy(actor, "load A", a_bytes, ring.full[s], self.tile("ab", i), lat,
                      rate=self.copy_rate)
        self.tma_copy(actor, "load B", b_bytes, ring.full[s], self.tile("ab", i), lat,
                      rate=self.copy_rate)

    @property
    def copy_rate(self) -> float:
        """Bytes per clk of this GEMM's copies: the copy engine's, or less when its rows do not
        start on 128-byte lines (`tma_misaligned_factor`)."""
        return self.hw.tma_rate / (1.0 if self.cfg.aligned else self.hw.tma_misaligned_factor)

    # --- compute -------------------------------------------------------------------------------
    def mma(self, w: int, i: int):
        """Issue this warpgroup's wgmmas for block i (SS: A and B from shared memory)."""
        return self.wgmma(w, "MMA", self.rows, self.cfg.block_n, self.cfg.block_k, True,
                          self.tile("ab", i))

    def wait_mma(self, group):
        """A k-step's wgmma group is done (the kernel's ``warpgroup_mma_wait``): `group` is the
        event `mma` returned, or None before the first (nothing to wait for)."""
        if group is not None:
            yield group

    def epilogue(self, w: int, t: int):
        """Accumulators → fp16 → shared memory → TMA store of this warpgroup's rows."""
        hw, cfg = self.hw, self.cfg
        elems = self.rows * cfg.block_n
        yield from self.fma.run(self.wg(w), "epilogue", elems / hw.fma_lanes_per_clk,
                                tile=self.tile("c", t))
        yield from self.tma.run(self.wg(w), "store C", elems * self.el / self.copy_rate,
                                tile=self.tile("c", t))
