"""What happened, when: busy intervals per unit and per actor, and the metrics read off them.

An interval says that `actor` (a warpgroup such as ``consumer0`` or ``producer``) kept `unit`
(``tensor``, ``sfu``, ``fma``, ``tma``, ``lsu``) busy doing `op` from `start` to `end` (SM clocks), on
`tile` (e.g. ``("kv", 7)``: block 7 of the K/V ring). `work` is the useful part of the interval
(a wgmma's math, not its operand fetch). `marks` are instants: a copy landing, a barrier wait
ending. Export goes to the Chrome/Perfetto trace format that Proton writes for real kernels.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

UNITS = ("tma", "tensor", "sfu", "fma", "lsu",   # lsu: the warps' own loads and stores (fa2's
         "tmem")                                 # ldmatrix, attention's O); tmem: Blackwell's
                                                 # tcgen05.ld/st (sim/attention/fa4.py)


class Interval(NamedTuple):
    """A tuple, not a dataclass: the model makes millions (one per piece of work, merged), and
    the session cache (sim/memo.py) reads them back by the million — a tuple is built and
    unpickled several times faster."""
    actor: str
    unit: str
    op: str
    start: float
    end: float
    tile: tuple | None = None
    work: float = 0.0

    @property
    def length(self) -> float:
        return self.end - self.start


@dataclass
class Trace:
    intervals: list[Interval] = field(default_factory=list)
    marks: list[tuple[float, str, str, tuple | None]] = field(default_factory=list)
    # (actor, what) -> list of (start, end) spent blocked on a barrier, for the Gantt's idle view
    waits: list[tuple[str, str, float, float]] = field(default_factory=list)

    def busy(self, actor, unit, op, start, end, tile=None, work=None) -> None:
        work = end - start if work is None else work
        last = self.intervals[-1] if self.intervals else None
        # Consecutive pieces of the same work merge, so a 19-instruction GEMM is one interval.
        if (last is not None and last.actor == actor and last.unit == unit and last.op == op
                and last.tile == tile and last.end == start):
            self.intervals[-1] = Interval(actor, unit, op, last.start, end, tile, last.work + work)
        else:
            self.intervals.append(Interval(actor, unit, op, start, end, tile, work))

    def mark(self, t: float, actor: str, what: str, tile=None) -> None:
        self.marks.append((t, actor, what, tile))

    def wait(self, actor: str, what: str, start: float, end: float) -> None:
        if end > start:
            self.waits.append((actor, what, start, end))

    # --- metrics -------------------------------------------------------------------------------
    @property
    def span(self) -> float:
        if not self.intervals:
            return 0.0
        return max(i.end for i in self.intervals) - min(i.start for i in self.intervals)

    def busy_time(self, unit: str) -> float:
        return sum(i.length for i in self.intervals if i.unit == unit)

    def work_time(self, unit: str) -> float:
        return sum(i.work for i in self.intervals if i.unit == unit)

    def utilization(self, span: float | None = None) -> dict[str, float]:
        """Useful work per unit over the span (tensor: math only, not operand fetch)."""
        span = self.span if span is None else span
        return {u: (self.work_time(u) / span if span else 0.0) for u in UNITS}

    def idle_gaps(self, unit: str, min_clk: float = 0.0) -> list[tuple[float, float]]:
        """Stretches inside the span when `unit` did nothing, longest first."""
        ivs = sorted((i.start, i.end) for i in self.intervals if i.unit == unit)
        if not ivs:
            return []
        t0 = min(i.start for i in self.intervals)
        gaps, cursor = [], t0
        for s, e in ivs:
            if s - cursor > min_clk:
                gaps.append((cursor, s))
            cursor = max(cursor, e)
        end = t0 + self.span
        if end - cursor > min_clk:
            gaps.append((cursor, end))
        return sorted(gaps, key=lambda g: g[0] - g[1])

    def actors(self) -> list[str]:
        seen = dict.fromkeys(i.actor for i in self.intervals)
        return sorted(seen, key=lambda a: (not a.startswith("producer"), a))

    # --- export --------------------------------------------------------------------------------
    def to_chrome(self, clock_hz: float, process: str = "SM 0") -> dict:
        """Chrome/Perfetto trace JSON: one thread per unit and one per actor, times in µs."""
        us = 1e6 / clock_hz
        lanes = [f"unit:{u}" for u in UNITS] + [f"wg:{a}" for a in self.actors()]
        tid = {lane: n for n, lane in enumerate(lanes)}
        events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": process}}]
        events += [{"ph": "M", "name": "thread_name", "pid": 0, "tid": n, "args": {"name": lane}}
                   for lane, n in tid.items()]
        for i in self.intervals:
            args = {"unit": i.unit, "actor": i.actor, "tile": list(i.tile) if i.tile else None,
                    "work_clk": i.work}
            for lane in (f"unit:{i.unit}", f"wg:{i.actor}"):
                events.append({"ph": "X", "name": i.op, "pid": 0, "tid": tid[lane],
                               "ts": i.start * us, "dur": i.length * us, "args": args})
        for actor, what, s, e in self.waits:
            events.append({"ph": "X", "name": f"wait {what}", "pid": 0, "tid": tid[f"wg:{actor}"],
                           "ts": s * us, "dur": (e - s) * us, "cat": "wait"})
        return {"traceEvents": events, "displayTimeUnit": "ns"}

    def write_chrome(self, path, clock_hz: float) -> None:
        with open(path, "w") as f:
            json.dump(self.to_chrome(clock_hz), f)
