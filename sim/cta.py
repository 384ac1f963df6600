"""What every CTA schedule stands on, attention or GEMM: the SM's units, the barriers' waits (each
leaves a mark in the trace), the consumers' turns and CTA barrier, a TMA copy, a wgmma group.

The costs live here once, so every variant of both workloads pays the same for the same step:

* wgmma m64nNk16: max(2·64·N·16 FLOP / rate — N/2 clk on Hopper, N/4 for fp8 —, shared-memory
  operand bytes / 128 B/clk) + ``wgmma_overhead_clk`` of the tensor pipe; results readable
  ``wgmma_latency_clk`` after the last one. Issuing each costs the warpgroup
  ``wgmma_issue_clk`` + ``wgmma_issue_clk_per_n``·N + ``wgmma_descriptor_clk`` (+
  ``wgmma_issue_rs_clk`` with A from registers), and no more than ``wgmma_queue_depth`` are in
  flight on the SM (`issued`).
* TMA copy: ``tma_issue_clk`` before the copy engine has it, bytes / ``tma_rate`` on the copy
  engine (the SM's link, or its share of L2 when the SMs together saturate it), then the latency
  until the bytes land on the barrier: ``tma_latency_clk`` for an L2 hit, the GEMMs' operand
  streams ``tma_hbm_latency_clk``.
"""
from __future__ import annotations

import math

import simpy

from .config import DTYPES
from .engine import IssueSlot, MBarrier, Ring, TensorCore, Turns, Unit
from .hardware import Hardware
from .trace import Trace


def make_units(env: simpy.Environment, hw: Hardware, trace: Trace) -> dict:
    slot = IssueSlot(env, trace, on=hw.issue_slots)
    return {"tensor": TensorCore(env, trace, hw.wgmma_latency_clk, depth=hw.wgmma_queue_depth),
            "sfu": Unit(env, "sfu", trace), "fma": Unit(env, "fma", trace),
            "tma": Unit(env, "tma", trace), "lsu": Unit(env, "lsu", trace), "issue": slot}


class CTA:
    on_event = None     # if set, called with each wait, TMA copy and wgmma group (sim.run.EVENTS)

    def __init__(self, env: simpy.Environment, hw: Hardware, trace: Trace, dtype: str,
                 consumers: int, name: str = "", units: dict | None = None):
        self.env, self.hw, self.trace, self.name = env, hw, trace, name
        self.el = DTYPES[dtype]
        self.fp8 = dtype == "fp8"
        units = units or make_units(env, hw, trace)
        self.tensor, self.sfu, self.fma, self.tma, self.lsu, self.slot = (
            units[u] for u in ("tensor", "sfu", "fma", "tma", "lsu", "issue"))
        self.turns = Turns(env, consumers, hw.mbarrier_clk, hw.mbarrier_probe_clk)
        # Without a producer the consumers are one loop: before a slot is refilled, every consumer
        # must be done with it, so they meet at a CTA barrier (bar.sync over the consumer warps).
        self.cta_bar = MBarrier(env, f"{name}bar.sync", consumers, hw.mbarrier_clk,
                                hw.mbarrier_probe_clk)
        self._syncs = [0] * consumers

    # --- names ---------------------------------------------------------------------------------
    def wg(self, w: int) -> str:
        return f"{self.name}consumer{w}"

    @property
    def producer_name(self) -> str:
        return f"{self.name}producer"

    def tile(self, what: str, j: int) -> tuple[str, int]:
        """Trace tag of block j of `what` ("kv", "ab", "q", ...), unique per CTA on the SM."""
        return (f"{self.name}{what}", j)

    # --- barriers ------------------------------------------------------------------------------
    def wait(self, actor: str, bar: MBarrier, parity: int):
        t0 = self.env.now
        yield from bar.wait(parity)
        self.trace.wait(actor, bar.name, t0, self.env.now)
        if self.on_event is not None:
            self.on_event(("wait", t0, self.env.now, actor, bar.name, parity))

    def sync_consumers(self, w: int):
        """bar.sync over the consumer warpgroups (the k-th time for each)."""
        k, self._syncs[w] = self._syncs[w], self._syncs[w] + 1
        self.cta_bar.arrive()
        yield from self.wait(self.wg(w), self.cta_bar, k & 1)

    def wait_turn(self, w: int, k: int, turns: Turns | None = None):
        """Warpgroup w's k-th turn on the tensor core (pingpong), or on other `turns`."""
        t0 = self.env.now
        yield from (turns or self.turns).wait(w, k)
        self.trace.wait(self.wg(w), "turn", t0, self.env.now)

    def pass_turn(self, w: int, turns: Turns | None = None) -> None:
        """Warpgroup w's GEMMs are queued: the next warpgroup's turn (on `turns`, if given)."""
        (turns or self.turns).pass_turn(w)

    def acquire(self, actor: str, ring: Ring, j: int):
        """Consumer side: wait until block j has landed in its slot."""
        s, phase = ring.slot(j)
        yield from self.wait(actor, ring.full[s], phase)

    def release(self, ring: Ring, j: int) -> None:
        """Consumer side: block j's slot goes back to the producer (arrive on its `empty`)."""
        ring.empty[ring.slot(j)[0]].arrive()

    def load(self, actor: str, ring: Ring, j: int) -> None:
        """expect_tx on block j's `full`, then its TMA copies: each workload's CTA says which."""
        raise NotImplementedError

    def produce(self, actor: str, ring: Ring, j: int):
        """Producer side: wait until block j's slot is free (the first lap passes), then `load`
        it (expect its bytes on `full`, TMA copy)."""
        s, phase = ring.slot(j)
        yield from self.wait(actor, ring.empty[s], phase ^ 1)
        self.load(actor, ring, j)

    # --- TMA -----------------------------------------------------------------------------------
    def tma_copy(self, actor: str, op: str, nbytes: int, bar: MBarrier, tile=None,
                 latency: float | None = None, landed=None, rate: float | None = None) -> None:
        """Issue one TMA copy that completes `nbytes` on `bar` (the caller did expect());
        `latency` defaults to an L2 hit's, `rate` (bytes per clk) to the copy engine's;
        `landed()`, if given, runs as the bytes land, just before they complete on `bar`."""
        on_event = self.on_event
        if on_event is not None:
            on_event(("tma", self.env.now, actor, op, bar.name, tile, nbytes))

        def copy():
            yield self.env.timeout(self.hw.tma_issue_clk)
            yield from self.tma.run(actor, op, nbytes / (rate or self.hw.tma_rate), tile=tile)
            yield self.env.timeout(self.hw.tma_latency_clk if latency is None else latency)
            self.trace.mark(self.env.now, actor, f"landed {op}", tile)
            if on_event is not None:
                on_event(("landed", self.env.now, actor, op, bar.name, tile, nbytes))
            if landed:
                landed()
            bar.complete_tx(nbytes)
        self.env.process(copy())

    # --- tensor core ---------------------------------------------------------------------------
    def wgmma(self, w: int, op: str, rows: int, n: int, k: int, a_from_smem: bool, tile):
        """Issue an async group of wgmma m64nNk16 covering rows × n × k for warpgroup w; return
        the event warpgroup_mma_wait waits on."""
        hw, el = self.hw, self.el
        flops = 2 * 64 * n * 16                     # one m64nNk16
        math_clk = flops / hw.tensor_flop_per_clk / (hw.fp8_speedup if self.fp8 else 1)
        smem_bytes = (64 * 16 * el if a_from_smem else 0) + n * 16 * el
        clk = max(math_clk, smem_bytes / hw.smem_bytes_per_clk) + hw.wgmma_overhead_clk
        issue = hw.wgmma_issue_clk + hw.wgmma_issue_clk_per_n * n + hw.wgmma_descriptor_clk + (
            0.0 if a_from_smem else hw.wgmma_issue_rs_clk)
        count = self.wgmma_count(rows, k)
        if self.on_event is not None:
            self.on_event(("wgmma", self.env.now, self.wg(w), op, tile, count))
        return self.tensor.issue(self.wg(w), op, count, clk, math_clk, tile, issue)

    def issued(self, w: int):
        """What warpgroup w's next instruction after its wgmmas waits for: the last one queued."""
        return self.tensor.issued(self.wg(w))

    def wgmma_count(self, rows: int, k: int) -> int:
        """wgmma m64nNk16 instructions in a group covering rows × k."""
        return (rows // 64) * math.ceil(k / 16)
