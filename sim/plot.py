"""Pictures of a trace: Gantt lanes (one per unit, one per warpgroup) with the idle time left
blank, utilization bars, and the ablation chart (model vs paper vs measured)."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from .trace import UNITS, Trace

# One colour per kind of work, the same in every chapter's figures.
COLORS = {
    "QKᵀ": "#1f77b4", "PV": "#17becf", "MMA": "#1f77b4",
    "softmax: max": "#ff7f0e", "softmax: exp": "#d62728", "softmax: scale/sum/pack": "#ffbb78",
    "rescale O": "#e377c2", "epilogue": "#8c564b",
    "load Q": "#2ca02c", "load K": "#98df8a", "load V": "#bcbd22", "load A": "#98df8a",
    "load B": "#bcbd22", "store O": "#7f7f7f", "store C": "#7f7f7f",
}
WAIT_COLOR = "#eeeeee"


def _color(op: str) -> str:
    if op in COLORS:
        return COLORS[op]
    return COLORS.get(op.split(":")[0], "#9467bd")


def gantt(trace: Trace, title: str = "", window: tuple[float, float] | None = None,
          clock_hz: float | None = None, ax=None):
    """Lanes for each unit, then for each warpgroup; blank = idle. Barrier waits are grey.
    `window` = (start, end) in clk to zoom into the steady state."""
    lanes = [f"unit: {u}" for u in UNITS if trace.busy_time(u) > 0]
    actors = trace.actors()
    lanes += [f"{a}" for a in actors]
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 0.45 * len(lanes) + 1.2))
    y = {lane: len(lanes) - 1 - n for n, lane in enumerate(lanes)}
    lo, hi = window or (0.0, max((i.end for i in trace.intervals), default=1.0))
    scale = 1e6 / clock_hz if clock_hz else 1.0
    seen = {}
    for i in trace.intervals:
        if i.end < lo or i.start > hi:
            continue
        for lane in (f"unit: {i.unit}", i.actor):
            ax.broken_barh([(i.start * scale, i.length * scale)], (y[lane] - 0.4, 0.8),
                           color=_color(i.op), linewidth=0)
        seen[i.op] = _color(i.op)
    for actor, _what, s, e in trace.waits:
        if e < lo or s > hi or actor not in y:
            continue
        ax.broken_barh([(s * scale, (e - s) * scale)], (y[actor] - 0.15, 0.3), color=WAIT_COLOR,
                       linewidth=0)
    ax.set_yticks(list(y.values()), list(y.keys()))
    ax.set_xlim(lo * scale, hi * scale)
    ax.set_xlabel("µs" if clock_hz else "SM clock cycles")
    ax.set_title(title)
    handles = [Patch(color=c, label=op) for op, c in seen.items()]
    handles.append(Patch(color=WAIT_COLOR, label="waiting on a barrier"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)
    ax.figure.tight_layout()
    return ax


def steady_window(trace: Trace, fraction: float = 0.25) -> tuple[float, float]:
    """A window of `fraction` of the run from its middle, away from prologue and epilogue."""
    end = max(i.end for i in trace.intervals)
    mid = end / 2
    return mid - fraction * end / 2, mid + fraction * end / 2


def utilization_bars(rows: dict[str, dict[str, float]], title: str = "", ax=None):
    """rows: variant -> {unit: utilization}. Grouped bars, one group per variant."""
    units = [u for u in UNITS if any(r.get(u, 0) > 0 for r in rows.values())]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.3 * len(rows) + 3, 3.6))
    width = 0.8 / len(units)
    for k, u in enumerate(units):
        xs = [n + k * width for n in range(len(rows))]
        ax.bar(xs, [r.get(u, 0) for r in rows.values()], width, label=u)
    ax.set_xticks([n + 0.4 - width / 2 for n in range(len(rows))], list(rows), rotation=20)
    ax.set_ylim(0, 1)
    ax.set_ylabel("busy fraction (useful work)")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=len(units))
    ax.figure.tight_layout()
    return ax


def ablation(model: dict[str, float], paper: dict[str, float] | None = None,
             measured: dict[str, float] | None = None, peak: float | None = None,
             title: str = "", ax=None):
    """TFLOPs/s per variant: model bars, paper and measured markers, the tensor peak as a line."""
    names = list(model)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.1 * len(names) + 3, 3.8))
    xs = range(len(names))
    ax.bar(xs, [model[n] for n in names], 0.6, label="model", color="#1f77b4")
    for series, marker, label in ((paper, "D", "paper"), (measured, "o", "measured")):
        if series:
            pts = [(x, series[n]) for x, n in zip(xs, names) if n in series]
            if pts:
                ax.scatter(*zip(*pts), marker=marker, s=50, zorder=3, label=label,
                           color="#d62728" if label == "paper" else "#2ca02c")
    if peak:
        ax.axhline(peak, color="grey", linestyle="--", linewidth=1, label="tensor peak")
    ax.set_xticks(list(xs), names, rotation=20)
    ax.set_ylabel("TFLOPs/s")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax


def lane_rows(ax, rows: list[tuple[str, list]], window: tuple[float, float]):
    """Named lanes of spans [(scope, start, end)] in clk, top to bottom, on one time axis: the
    measured-vs-model figure (fidelity/lanes.py). Scope names take the Gantt's colours
    (QK as QKᵀ, the waits grey, the rest their own)."""
    lo, hi = window
    names = {"QK": "QKᵀ", "softmax": "softmax: exp", "wait turn": "turn"}
    seen = {}
    for k, (_label, spans) in enumerate(rows):
        y = len(rows) - 1 - k
        for n, s, e in spans:
            if e < lo or s > hi:
                continue
            wait = n.startswith("wait")
            color = WAIT_COLOR if wait else _color(names.get(n, n))
            if n == "wait turn":
                color = "#bbbbbb"
            ax.broken_barh([(s, e - s)], (y - (0.15 if wait else 0.4), 0.3 if wait else 0.8),
                           color=color, linewidth=0)
            seen[n] = color
    ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)])
    ax.set_xlim(lo, hi)
    ax.set_xlabel("SM clock cycles")
    ax.legend(handles=[Patch(color=c, label=n) for n, c in seen.items()], loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return ax
