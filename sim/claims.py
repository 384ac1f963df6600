"""What the chapters' figures show, checked on the trace they are drawn from.

A sentence such as "no two consumers' Q·Kᵀ overlap" or "P·V_{j-1} runs under the softmax of
block j" is a function here that reads a `Trace` and returns the evidence (the overlapping pairs,
the clocks of overlap per block), and a predicate that is true when the sentence is. The chapters
call them beside their figures and print what they found; `tests/model/test_claims.py` holds each
one to the course's schedules *and* shows it false on a schedule built to break it.

Blocks are the K/V ring's (an interval's tile ``("kv", j)``); "steady" blocks leave out the first
`EDGE` and the last `EDGE` of a CTA, where the prologue and the epilogue are.
"""
from __future__ import annotations

from itertools import combinations

from .trace import Trace

EDGE = 2    # blocks at each end of a CTA that are not the steady state
SOFTMAX_OPS = ("softmax: exp", "softmax: scale/sum")


def _spans(trace: Trace, ops, unit: str | None = None) -> dict[tuple[str, int], tuple[float, float]]:
    """(actor, block j) -> (first start, last end) of the intervals of `ops` on tile ("kv", j)."""
    out: dict = {}
    for i in trace.intervals:
        if i.op in ops and (unit is None or i.unit == unit) and i.tile and i.tile[0].endswith("kv"):
            key = (i.actor, i.tile[1])
            a, b = out.get(key, (i.start, i.end))
            out[key] = (min(a, i.start), max(b, i.end))
    return out


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def consumers(trace: Trace) -> list[str]:
    return [a for a in trace.actors() if "consumer" in a]


def steady(trace: Trace) -> range:
    """The K/V blocks of the steady state: all but the first and last `EDGE`."""
    n = 1 + max((j for _, j in _spans(trace, ("QKᵀ",), "tensor")), default=-1)
    if n <= 2 * EDGE:
        raise ValueError(f"a steady state needs more than {2 * EDGE} K/V blocks, the trace has {n}")
    return range(EDGE, n - EDGE)


def gemm(trace: Trace, op: str) -> dict[tuple[str, int], tuple[float, float]]:
    """(actor, block j) -> the span of its `op` wgmma group ("QKᵀ" or "PV") on the tensor core."""
    return _spans(trace, (op,), "tensor")


def softmax(trace: Trace) -> dict[tuple[str, int], tuple[float, float]]:
    """(actor, block j) -> its softmax of block j, from the start of the row max (a wait on the
    warpgroup's own latency, drawn on its lane) to the last exp or scale/sum piece."""
    pieces = _spans(trace, SOFTMAX_OPS)
    rowmax = {}
    for actor, what, s, _ in trace.waits:
        if what == "softmax: row max":
            rowmax.setdefault(actor, []).append(s)
    out = {}
    for (actor, j), (a, b) in pieces.items():
        starts = [s for s in rowmax.get(actor, ()) if s <= a]
        out[(actor, j)] = (max(starts, default=a), b)
    return out


# --- chapter 03: the turns keep the score GEMMs apart ---------------------------------------------
def qk_collisions(trace: Trace, blocks: range | None = None) -> list[tuple[str, int, str, int]]:
    """Pairs of different warpgroups' Q·Kᵀ groups that are on the tensor core at the same time
    (their spans overlap), among the groups of `blocks` (default: all)."""
    spans = {k: v for k, v in gemm(trace, "QKᵀ").items() if blocks is None or k[1] in blocks}
    return [(a[0], a[1], b[0], b[1]) for (a, sa), (b, sb) in combinations(sorted(spans.items()), 2)
            if a[0] != b[0] and _overlap(sa, sb) > 1e-9]


def qk_apart(trace: Trace) -> bool:
    """Chapter 03's claim: in the steady state no two consumers' Q·Kᵀ overlap."""
    return not qk_collisions(trace, steady(trace))


# --- chapter 04: a warpgroup's own P·V under its softmax ------------------------------------------
def pv_under_softmax(trace: Trace, part: str = "softmax") -> dict[tuple[str, int], float]:
    """(consumer, j) -> clocks during which its P_{j-1}·V_{j-1} is on the tensor core while its
    softmax of block j runs, for the steady blocks. `part="exp"`: only the exps and their FMA
    work count as the softmax (not the row max before them)."""
    pv = gemm(trace, "PV")
    sm = softmax(trace) if part == "softmax" else _spans(trace, SOFTMAX_OPS)
    return {(a, j): _overlap(pv[(a, j - 1)], sm[(a, j)])
            for a in consumers(trace) for j in steady(trace)
            if (a, j - 1) in pv and (a, j) in sm}


def pv_overlaps_softmax(trace: Trace, part: str = "softmax") -> bool:
    """Chapter 04's claim: in the steady state each consumer's P_{j-1}·V_{j-1} overlaps its own
    softmax of block j, in every block (`part` as in `pv_under_softmax`)."""
    found = pv_under_softmax(trace, part)
    return bool(found) and min(found.values()) > 0


# --- chapter 02: without a CTA barrier the consumers drift apart ---------------------------------
def exp_coincidence(trace: Trace) -> dict[int, float]:
    """Block j -> the fraction of the span of consumer 0's exps of block j during which consumer 1
    is in the span of its own exps (of any block): 1 when the two softmaxes collide on the SFU,
    0 when they alternate."""
    c = consumers(trace)
    if len(c) < 2:
        raise ValueError(f"drift needs two consumers, the trace has {c}")
    exps = _spans(trace, ("softmax: exp",), "sfu")
    out: dict[int, float] = {}
    for j in steady(trace):
        if (c[0], j) not in exps:
            continue
        window = exps[(c[0], j)]
        other = sum(_overlap(window, s) for (a, _), s in exps.items() if a == c[1])
        out[j] = other / (window[1] - window[0])
    return out


def qk_offset(trace: Trace) -> dict[int, float]:
    """Block j -> clocks between the two first consumers' Q·K_jᵀ starts (0: issued together)."""
    c = consumers(trace)
    qk = gemm(trace, "QKᵀ")
    return {j: abs(qk[(c[1], j)][0] - qk[(c[0], j)][0]) for j in steady(trace)
            if (c[0], j) in qk and (c[1], j) in qk}


def drift_apart(trace: Trace, most: float = 0.5) -> bool:
    """Chapter 02's claim: the consumers' softmaxes do not collide — in the steady state, on
    average, less than `most` of one consumer's exps run beside the other's."""
    co = exp_coincidence(trace)
    return bool(co) and sum(co.values()) / len(co) < most


def softmax_under_others(trace: Trace) -> dict[tuple[str, int], float]:
    """(consumer, j) -> clocks of its softmax of block j during which another consumer's wgmmas
    (Q·Kᵀ or P·V) are on the tensor core, for the steady blocks: the idle time pingpong fills."""
    sm = softmax(trace)
    others = [i for i in trace.intervals if i.unit == "tensor"]
    return {(a, j): sum(_overlap(sm[(a, j)], (i.start, i.end)) for i in others if i.actor != a)
            for a in consumers(trace) for j in steady(trace) if (a, j) in sm}
