"""Lanes: what one warp(group) was doing, as named spans, and the measures read off them.

A *lane* is one role's timeline as named spans ``[(name, start, end), ...]`` in SM clocks: a warp's
Proton scopes on the machine, or a model actor's waits and work (``fidelity/lanes.py`` builds
those from the model's trace). The same measures are read off both, over the same kind of window.
"""
from __future__ import annotations

import itertools

Span = tuple[str, float, float]


def steady_window(markers: list[float], skip: int) -> tuple[float, float, int]:
    """(start, end, iterations) between the `skip`-th marker and the `skip`-th from the end:
    whole iterations away from the prologue and the drain. Markers are iteration starts."""
    m = sorted(markers)
    if len(m) < 2 * skip + 2:
        skip = max(0, (len(m) - 2) // 2)
    if len(m) < 2:
        raise ValueError(f"need at least two iteration starts for a window, got {len(m)}")
    a, b = skip, len(m) - 1 - skip
    return m[a], m[b], b - a


def busy_fractions(lane: list[Span], window: tuple[float, float]) -> dict[str, float]:
    """Share of the window each span name covers (overlapping spans of one name count once)."""
    lo, hi = window
    out: dict[str, float] = {}
    for name in dict.fromkeys(n for n, _, _ in lane):
        ivs = sorted((max(s, lo), min(e, hi)) for n, s, e in lane if n == name and e > lo and s < hi)
        covered, cursor = 0.0, lo
        for s, e in ivs:
            s = max(s, cursor)
            if e > s:
                covered += e - s
                cursor = e
        out[name] = covered / (hi - lo) if hi > lo else 0.0
    return out


def mean_durations(lane: list[Span], window: tuple[float, float]) -> dict[str, float]:
    """Mean length of the spans of each name that start inside the window."""
    lo, hi = window
    acc: dict[str, list[float]] = {}
    for n, s, e in lane:
        if lo <= s < hi:
            acc.setdefault(n, []).append(e - s)
    return {n: sum(v) / len(v) for n, v in acc.items()}


def median_step(starts: list[float], window: tuple[float, float]) -> float:
    """Median gap between consecutive starts inside the window (robust to a tile boundary)."""
    s = sorted(t for t in starts if window[0] <= t <= window[1])
    gaps = sorted(b - a for a, b in itertools.pairwise(s))
    if not gaps:
        raise ValueError("fewer than two starts inside the window")
    return gaps[len(gaps) // 2]
