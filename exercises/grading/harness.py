"""What the model exercises' tests run: load a submission file, run the course's SimPy model with a
student-written role plugged in, and watch the ring and the turns while it runs.

`CheckedCTA` is `sim.attention.cta.AttentionCTA` with recorders: it knows which K/V block sits in
which slot (from the producer's TMA copies), when each landed, when the consumers read it (wgmma
issue) and released it. Violations are collected, not raised, so one run answers every question
(did it finish, did anyone read a slot before its block landed, did the producer claim a slot the
consumers had not released, how long it took).
"""
from __future__ import annotations

import importlib.util
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import simpy

from sim.attention import (
    make_units,  # re-exported there (sim/cta.py or sim/attention/cta.py)
    prepare,
)
from sim.attention import module as variant_module
from sim.attention.cta import AttentionCTA
from sim.config import AttentionConfig
from sim.engine import MBarrier
from sim.hardware import H100, Hardware
from sim.trace import Trace

_counter = itertools.count()


def load_submission(test_file: str, rel: str):
    """Import the submission file `rel` that sits next to `test_file` (fresh module each call)."""
    path = Path(test_file).resolve().parent / rel
    if not path.is_file():
        raise FileNotFoundError(f"submission file {rel} is missing")
    name = f"submission_{path.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Full(MBarrier):
    """A ring's `full` barrier that tells the CTA when the producer claims its slot (expect)."""

    def __init__(self, cta, ring_name, slot, base: MBarrier):
        super().__init__(base.env, base.name, base.count, base.wake_clk)
        self._cta, self._ring, self._slot = cta, ring_name, slot

    def expect(self, nbytes: int) -> None:
        self._cta._claim(self._ring, self._slot)
        super().expect(nbytes)


class CheckedCTA(AttentionCTA):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.violations: dict[str, list[str]] = {"read_before_land": [], "overwrite": [],
                                                 "copy": []}
        self.fills = {r: [0] * self.cfg.stages for r in ("k", "v")}       # claims per slot
        self.content = {r: [None] * self.cfg.stages for r in ("k", "v")}  # (block, landed?)
        self.copied = {"k": [], "v": [], "q": 0}
        for r, ring in (("k", self.k), ("v", self.v)):
            ring.full = [_Full(self, r, s, b) for s, b in enumerate(ring.full)]

    def _ring_of(self, bar):
        for r, ring in (("k", self.k), ("v", self.v)):
            for s, b in enumerate(ring.full):
                if b is bar:
                    return r, s
        return None, None

    def _claim(self, r: str, s: int) -> None:
        ring = self.k if r == "k" else self.v
        n = self.fills[r][s]
        if ring.empty[s].completed < n:
            self.violations["overwrite"].append(
                f"t={self.env.now:.0f}: the producer claimed {r}-slot {s} for its fill #{n + 1} "
                f"while the consumers had released it only {ring.empty[s].completed} time(s)")
        self.fills[r][s] = n + 1

    def tma_copy(self, actor, op, nbytes, bar, tile=None, **kw):
        if bar is self.q_full:
            self.copied["q"] += 1
            return super().tma_copy(actor, op, nbytes, bar, tile, **kw)
        r, s = self._ring_of(bar)
        if r is None:
            self.violations["copy"].append(f"t={self.env.now:.0f}: a TMA copy completes on "
                                           f"{getattr(bar, 'name', bar)!r}, not a ring's full barrier")
            return super().tma_copy(actor, op, nbytes, bar, tile, **kw)
        if not (isinstance(tile, tuple) and len(tile) == 2 and isinstance(tile[1], int)):
            self.violations["copy"].append(f"copy into {r}-slot {s} not tagged with cta.tile('kv', j)")
            block = None
        else:
            block = tile[1]
        self.copied[r].append(block)
        self.content[r][s] = (block, False)

        def landed():
            if self.content[r][s] == (block, False):
                self.content[r][s] = (block, True)
        return super().tma_copy(actor, op, nbytes, bar, tile, landed=landed, **kw)

    def _check_read(self, r: str, w: int, j: int) -> None:
        s = j % self.cfg.stages
        have = self.content[r][s]
        if have != (j, True):
            what = ("nothing" if have is None else
                    f"block {have[0]} ({'landed' if have[1] else 'still in flight'})")
            self.violations["read_before_land"].append(
                f"t={self.env.now:.0f}: consumer {w} read {r.upper()} block {j} from slot {s}, "
                f"which holds {what}")

    def qk(self, w, j):
        self._check_read("k", w, j)
        return super().qk(w, j)

    def pv(self, w, j):
        self._check_read("v", w, j)
        return super().pv(w, j)


class ProducerView:
    """What a student's producer gets: the CTA without the one-call helpers that would do the
    exercise for them (`produce`, `load`)."""

    _HIDDEN = ("produce", "load")

    def __init__(self, cta: CheckedCTA):
        object.__setattr__(self, "_cta", cta)

    def __getattr__(self, name):
        if name in self._HIDDEN:
            raise AttributeError(f"cta.{name} does the exercise for you: write the wait on empty, "
                                 "the expect on full and the TMA copy yourself")
        return getattr(self._cta, name)


@dataclass
class Run:
    clk: float
    finished: bool
    error: str
    trace: Trace
    cta: CheckedCTA
    n_blocks: int
    violations: dict = field(default_factory=dict)


def config(variant: str = "ws", stages: int = 2, hw: Hardware = H100, **kw) -> AttentionConfig:
    return prepare(AttentionConfig(variant=variant, stages=stages, **kw), hw)


def run_cta(producer=None, consumer=None, variant: str = "ws", n_blocks: int = 8, stages: int = 2,
            hw: Hardware = H100, limit_clk: float = 5e6, **cfg_kw) -> Run:
    """One CTA of `variant` (tab. 2 tiles) over n_blocks K/V blocks, with the student's producer
    and/or consumer in place of the variant's own."""
    cfg = config(variant, stages, hw, **cfg_kw)
    mod = variant_module(variant)
    env, trace = simpy.Environment(), Trace()
    cta = CheckedCTA(env, hw, cfg, trace, n_blocks, units=make_units(env, hw, trace))
    error = ""
    finished = False
    try:
        prod = producer(ProducerView(cta)) if producer else mod.producer(cta)
        cons = consumer or mod.consumer
        procs = [env.process(prod)] + [env.process(cons(cta, w)) for w in range(cfg.consumers)]
        done = simpy.AllOf(env, procs)
        while not done.triggered:
            nxt = env.peek()
            if nxt == float("inf"):
                error = ("deadlock: every role waits on a barrier that never completes "
                         f"(t={env.now:.0f})")
                break
            if nxt > limit_clk:
                error = f"not finished after {limit_clk:.0f} clk (a role loops forever?)"
                break
            env.step()
        finished = done.triggered and done.ok
        if done.triggered and not done.ok:
            exc = done.value
            error = f"a role raised {type(exc).__name__}: {exc}"
            if isinstance(exc, Exception):
                done.defused = True
    except RuntimeError as e:
        msg = str(e)
        error = ("deadlock: every role is waiting on a barrier that will never complete"
                 if "No scheduled events left" in msg else f"{type(e).__name__}: {msg}")
    except Exception as e:  # noqa: BLE001 - the student's code raised
        error = f"{type(e).__name__}: {e}"
    return Run(env.now, finished, error, trace, cta, n_blocks, cta.violations)


def reference_clk(variant: str, n_blocks: int = 8, stages: int = 2, hw: Hardware = H100,
                  **cfg_kw) -> float:
    run = run_cta(variant=variant, n_blocks=n_blocks, stages=stages, hw=hw, **cfg_kw)
    assert run.finished and not any(run.violations.values()), run.violations
    return run.clk


def gemm_groups(trace: Trace, op: str) -> dict[tuple[str, object], tuple[float, float]]:
    """(actor, tile) -> (first start, last end) of each wgmma group `op` on the tensor core."""
    spans: dict = {}
    for i in trace.intervals:
        if i.unit == "tensor" and i.op == op:
            key = (i.actor, i.tile)
            a, b = spans.get(key, (i.start, i.end))
            spans[key] = (min(a, i.start), max(b, i.end))
    return spans


def overlaps(trace: Trace, op: str) -> list[str]:
    """Pairs of `op` groups of different warpgroups whose spans overlap on the tensor core."""
    spans = sorted(gemm_groups(trace, op).items(), key=lambda kv: kv[1][0])
    found = []
    for (k1, (a1, b1)), (k2, (a2, b2)) in itertools.combinations(spans, 2):
        if k1[0] != k2[0] and a2 < b1 - 1e-9 and a1 < b2 - 1e-9:
            found.append(f"{k1[0]} {op} {k1[1]} [{a1:.0f}, {b1:.0f}) overlaps "
                         f"{k2[0]} {op} {k2[1]} [{a2:.0f}, {b2:.0f})")
    return found


def in_grader() -> bool:
    return bool(os.environ.get("EXERCISES_STAGE"))


# --- chapter 00: the model's own costs, measured by running one step alone -----------------------
def model_wgmma_clk(hw: Hardware, rows: int, n: int, k: int, dtype: str = "fp16",
                    a_from_smem: bool = True) -> float:
    """Tensor-pipe cycles of one warpgroup's wgmma group (rows × n × k) run alone in the model."""
    from sim.cta import CTA
    env, trace = simpy.Environment(), Trace()
    cta = CTA(env, hw, trace, dtype, 1)
    done = cta.wgmma(0, "gemm", rows, n, k, a_from_smem, None)
    env.run(done)
    return trace.busy_time("tensor")


def model_softmax_clk(hw: Hardware, rows: int, block_n: int, masked: bool = False) -> float:
    """Cycles of one warpgroup's online softmax of a rows × block_n score tile run alone."""
    cfg = prepare(AttentionConfig(variant="ws", headdim=64, block_m=rows, block_n=block_n,
                                  consumers=1, stages=1), hw)
    env, trace = simpy.Environment(), Trace()
    cta = AttentionCTA(env, hw, cfg, trace, n_blocks=1, masked_blocks=1 if masked else 0)
    env.run(env.process(cta.softmax(0, 0)))
    return env.now
