"""Pictures of a trace: Gantt lanes (one per unit, one per warpgroup) with the idle time left
blank, utilization bars, and the ablation chart (model vs paper vs measured)."""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from .trace import UNITS, Trace

# --- one palette ---------------------------------------------------------------------------------
# Every span any figure draws — a model interval's op, a model wait's barrier, a Proton scope of a
# real kernel (fidelity/lanes.py) — is one KIND of work, with one colour and one legend label, the
# same in every chapter. Colours are from the colour-blind-safe sets of Okabe & Ito and of Paul Tol
# (muted, bright, light), grouped by family: tensor core blue, softmax warm, copies green, waits on
# barriers drawn as thin bars in greys and pale tints. `style` sets the bar's height: "work" (a unit
# busy), "latency" (the warpgroup busy on a dependent chain, no unit), "wait" (blocked on a
# barrier or on its turn).
PALETTE: dict[str, tuple[str, str, str]] = {
    # kind:            (colour,    legend label,                                  style)
    "qk":              ("#0072B2", "QKᵀ (wgmma)",                                 "work"),
    "pv":              ("#56B4E9", "PV (wgmma)",                                  "work"),
    "mma":             ("#4477AA", "MMA: A·B (wgmma)",                            "work"),
    "ldmatrix":        ("#332288", "ldmatrix: K, V to registers",                 "work"),
    "rowmax":          ("#882255", "softmax: row max (latency)",                  "latency"),
    "exp":             ("#D55E00", "softmax: exp (SFU)",                          "work"),
    "softmax_fma":     ("#E69F00", "softmax: scale, sum (FMA)",                   "work"),
    "stall":           ("#CC6677", "softmax: dependency stall",                   "latency"),
    "pack":            ("#F0E442", "pack P to 16 bits (FMA)",                     "work"),
    "rescale":         ("#AA4499", "rescale O (FMA)",                             "work"),
    "softmax":         ("#EE8866", "softmax (scope: max, exp, sum, pack)",        "work"),
    "epilogue":        ("#999933", "epilogue",                                    "work"),
    "load_q":          ("#117733", "load Q (TMA)",                                "work"),
    "load_k":          ("#44AA99", "load K (TMA)",                                "work"),
    "load_v":          ("#AAAA00", "load V (TMA)",                                "work"),
    "load_a":          ("#228833", "load A (TMA)",                                "work"),
    "load_b":          ("#BBCC33", "load B (TMA)",                                "work"),
    "tma_issue":       ("#44BB99", "TMA issue (producer)",                        "work"),
    "store_smem":      ("#DDCC77", "O through shared memory",                     "work"),
    "store":           ("#663333", "store O to HBM",                              "work"),
    "wait_full":       ("#BBBBBB", "wait: K, V to land (full barrier)",           "wait"),
    "wait_slot":       ("#555555", "wait: a free slot (empty barrier)",           "wait"),
    "wait_turn":       ("#FFAABB", "wait: its turn (pingpong)", "wait"),
    "wait_q":          ("#99DDFF", "wait: Q to land",                             "wait"),
    "wait_sync":       ("#CCDDAA", "wait: the other consumers (bar.sync)",        "wait"),
    "wait_issue":      ("#77AADD", "wait: to issue a wgmma (queue full)",         "wait"),
    # Blackwell (sim/attention/fa4.py)
    "umma_qk":         ("#004488", "S = QKᵀ (tcgen05, into TMEM)",               "work"),
    "umma_pv":         ("#33BBEE", "O += PV (tcgen05, P from TMEM)",             "work"),
    "exp_poly":        ("#EE7733", "softmax: exp as a polynomial (FMA)",          "work"),
    "tmem_ld":         ("#009988", "tcgen05.ld: TMEM to registers (S, O)",        "work"),
    "tmem_st":         ("#0077BB", "tcgen05.st: registers to TMEM (P, O)",        "work"),
    "wait_tmem":       ("#DDDDDD", "wait: a TMEM hand-off (S, P, O)",            "wait"),
    "wait_stats":      ("#EEDD88", "wait: the row max (correction)",              "wait"),
}

# A GEMM's timeline (its MMAs, its loads of A and B) names the kinds it shares with attention's
# by its own operands: same colour, its legend label from here (`legend_label`).
GEMM_LABELS: dict[str, str] = {
    "store": "store C to HBM",
    "wait_full": "wait: A, B to land (full barrier)",
}
_GEMM_KINDS, _ATTENTION_KINDS = {"mma", "load_a", "load_b"}, {"qk", "pv", "load_k", "load_v"}


def legend_label(k: str, drawn) -> str:
    """The legend label of kind `k` in a figure that draws the kinds `drawn`: `GEMM_LABELS`'
    where the figure is a GEMM's (its kinds include an MMA or a load of A or B and none of
    attention's), else the palette's."""
    gemm = bool(set(drawn) & _GEMM_KINDS) and not set(drawn) & _ATTENTION_KINDS
    return GEMM_LABELS.get(k, PALETTE[k][1]) if gemm else PALETTE[k][1]


# Operation names -> kind: the model's interval ops (sim/*/), its waits' barrier names with the
# CTA prefix and the stage index taken off (`cta1.k.full[0]` -> `k.full`), and the scope names of
# the Proton traces (instruments/trace.py, results/traces/).
OPS: dict[str, str] = {
    # the model's intervals
    "QKᵀ": "qk", "PV": "pv", "MMA": "mma", "QKᵀ: ldmatrix": "ldmatrix", "PV: ldmatrix": "ldmatrix",
    "softmax: exp": "exp", "softmax: scale/sum": "softmax_fma", "pack P": "pack",
    "rescale O": "rescale", "epilogue": "epilogue", "load Q": "load_q", "load K": "load_k",
    "load V": "load_v", "load A": "load_a", "load B": "load_b", "O through smem": "store_smem",
    "store O": "store", "store C": "store",
    # the model's waits
    "softmax: row max": "rowmax", "softmax dependency stall": "stall",
    "k.full": "wait_full", "v.full": "wait_full", "ab.full": "wait_full",
    "k.empty": "wait_slot", "v.empty": "wait_slot", "ab.empty": "wait_slot",
    "turn": "wait_turn", "q_full": "wait_q", "bar.sync": "wait_sync", "wgmma issue": "wait_issue",
    # fa4's intervals and waits (sim/attention/fa4.py)
    "S = QKᵀ": "umma_qk", "O += PV": "umma_pv", "softmax: exp (polynomial)": "exp_poly",
    "tmem load S": "tmem_ld", "tmem load O": "tmem_ld",
    "tmem store P": "tmem_st", "tmem store O": "tmem_st", "kv.full": "wait_full",
    "kv.empty": "wait_slot", "s_full": "wait_tmem", "p_full": "wait_tmem", "o_ready": "wait_tmem",
    "o_full": "wait_tmem", "stats": "wait_stats",
    # the kernels' Proton scopes
    "QK": "qk", "softmax": "softmax", "TMA issue": "tma_issue",
    "wait K": "wait_full", "wait V": "wait_full", "wait full": "wait_full",
    "wait slot": "wait_slot", "wait turn": "wait_turn", "wait Q": "wait_q",
}

# A unit drawn as a whole (a utilization bar, chapter 00's rates) takes the colour of its main
# work in the timelines: the tensor core Q·Kᵀ's blue, the SFU the exps' vermilion, the FMA pipe the
# softmax's orange, the copy engine K's teal, the load/store pipe the store's brown.
UNIT_KIND: dict[str, str] = {"tensor": "qk", "sfu": "exp", "fma": "softmax_fma", "tma": "load_k",
                             "lsu": "store"}


def unit_style(unit: str) -> dict:
    """Matplotlib keywords that draw a whole unit (a bar) in the colour of its work (`UNIT_KIND`),
    tagged for `off_palette`."""
    if unit not in UNIT_KIND:
        raise ValueError(f"no colour for unit {unit!r}: one of {sorted(UNIT_KIND)}")
    return {"color": PALETTE[UNIT_KIND[unit]][0], "gid": f"unit:{unit}"}


# --- one style per source of a number ------------------------------------------------------------
# A figure that sets sources side by side — the model on one preset, our kernels measured on our
# H200, peers measured in the same run (cuDNN, cuBLAS, SDPA), a paper's reported numbers, a bound
# of the hardware — draws each source the same way in every chapter: bars in its colour, markers
# and lines in its colour, marker and line style (Okabe-Ito colours; the model's presets in blues
# and greens, the machine warm, peers grey, papers purple). A figure that compares settings of one
# source (head dims, tiles, variants, all from the model) names the source in its title and draws
# the settings in the colours of `SETTINGS`.
SERIES: dict[str, dict[str, str]] = {
    "model h100": {"color": "#009E73", "marker": "^", "linestyle": "-."},
    "model h200": {"color": "#0072B2", "marker": "D", "linestyle": "--"},
    "model h200-datasheet": {"color": "#56B4E9", "marker": "p", "linestyle": "--"},
    "model b200": {"color": "#332288", "marker": "v", "linestyle": "-."},
    "measured": {"color": "#D55E00", "marker": "o", "linestyle": "-"},     # our kernels, our H200
    "peer": {"color": "#555555", "marker": "s", "linestyle": ":"},         # cuDNN, cuBLAS, SDPA
    "paper": {"color": "#CC79A7", "marker": "*", "linestyle": "none"},     # a paper's numbers
    "bound": {"color": "#000000", "marker": "", "linestyle": "--"},        # a peak, a roofline
}
# The colours of a figure that compares settings of one source, in order (Paul Tol's muted and
# high-contrast sets): none is near a series' colour (`_NEAR`), so a head dim's line is never
# read as the machine's or the paper's. Importing this module makes them matplotlib's cycle.
# The yellow-orange is last: it is the one a reader may take for the machine's vermilion.
SETTINGS = ("#117733", "#882255", "#44AA99", "#999933", "#DDAA33")
plt.rcParams["axes.prop_cycle"] = plt.cycler(color=SETTINGS)
_NEAR = 0.25        # RGB distance under which two colours read as one in a legend
# A figure that compares kernels (variants) of one source draws each kernel in its own colour, the
# same in every chapter (`kernel_style`): SETTINGS' colours, each kernel one of them, so a figure
# that also draws settings must not draw them in a kernel's colour.
KERNELS: dict[str, str] = {
    "ws": "#44AA99", "ws_pingpong": "#882255", "fa3": "#117733", "overlap3": "#999933",
    "fa4": "#DDAA33",
}


def kernel_style(variant: str) -> dict:
    """Matplotlib keywords that draw kernel `variant` in its colour (`KERNELS`), tagged for
    `off_palette`."""
    if variant not in KERNELS:
        raise ValueError(f"no colour for kernel {variant!r}: one of {sorted(KERNELS)}")
    return {"color": KERNELS[variant], "gid": f"kernel:{variant}"}

# what each way of drawing takes from the series' style
_DRAWN = {"line": ("color", "marker", "linestyle"),      # ax.plot
          "points": ("color", "marker"),                 # ax.plot without a line, ax.scatter
          "bars": ("color",),                            # ax.bar, ax.barh, ax.axhspan
          "rule": ("color",)}                            # ax.axhline: dashed, or any dash


def style(series: str, drawn: str = "line") -> dict:
    """Matplotlib keywords that draw `series` (a key of `SERIES`) its way: `drawn` is "line"
    (ax.plot), "points" (ax.plot of markers alone, or ax.scatter), "bars" (ax.bar, ax.barh) or
    "rule" (ax.axhline). Each artist carries the gid "series:<name>", which `off_palette` reads
    back from the drawn figure."""
    if series not in SERIES:
        raise ValueError(f"no style for series {series!r}: one of {sorted(SERIES)}")
    if drawn not in _DRAWN:
        raise ValueError(f"drawn must be one of {sorted(_DRAWN)}; got {drawn!r}")
    out = {k: SERIES[series][k] for k in _DRAWN[drawn]}
    if drawn in ("points", "rule"):
        out["linestyle"] = {"points": "none", "rule": "--"}[drawn]
    return {**out, "gid": f"series:{series}"}


# A legend entry that names one of these is a source of numbers: it must be drawn in a series'
# style (`off_palette`).
_SOURCE_WORDS = re.compile(r"\b(model|measured|paper|cuDNN|cuBLAS|SDPA|peak|roofline|our H\d00)\b",
                           re.IGNORECASE)


def _colour(artist) -> str | None:
    from matplotlib.colors import to_hex
    for get in ("get_color", "get_facecolor"):
        if hasattr(artist, get):
            c = getattr(artist, get)()
            if hasattr(c, "ndim") and c.ndim == 2:        # a collection: one row per member
                if len(c) == 0:
                    return None
                c = c[0]
            return to_hex(c).lower()
    return None


def _like_a_series(colour: str | None) -> str | None:
    """The series whose colour `colour` is within `_NEAR` of, if any."""
    from matplotlib.colors import to_rgb
    if colour is None:
        return None
    rgb = to_rgb(colour)
    for name, st in SERIES.items():
        if sum((a - b) ** 2 for a, b in zip(rgb, to_rgb(st["color"]))) ** 0.5 < _NEAR:
            return name
    return None


def _expected(gid: str) -> dict[str, str] | None:
    what, _, name = gid.partition(":")
    if what == "series" and name in SERIES:
        return SERIES[name]
    if what == "kind" and name in PALETTE:
        return {"color": PALETTE[name][0]}
    if what == "unit" and name in UNIT_KIND:
        return {"color": PALETTE[UNIT_KIND[name]][0]}
    if what == "kernel" and name in KERNELS:
        return {"color": KERNELS[name]}
    return None


def off_palette(figures) -> list[str]:
    """What the drawn `figures` (matplotlib Figures) do against the one palette, as readable
    lines; empty if nothing. Checked on the artists themselves: every artist tagged by `style`,
    `unit_style`, `kernel_style` or a timeline bar has its series' (kind's, unit's, kernel's)
    colour, and a series' line its marker and line style; every legend entry is a palette kind
    under the palette's label and colour, or a drawn artist whose tag matches; and a legend entry
    that names a source of numbers (model, measured, paper, a peer, a bound) is drawn in a series'
    style."""
    problems = []
    for fig in figures:
        for ax in fig.axes:
            where = f"figure {fig.number} {ax.get_title()[:50]!r}"
            artists = [*ax.lines, *ax.patches, *ax.collections]
            problems += [f"{where}: {p}" for a in artists if a.get_gid() for p in _tag_problems(a)]
            if ax.get_legend() is not None:
                problems += [f"{where}: {p}" for p in _legend_problems(ax, artists)]
    return problems


def _tag_problems(artist) -> list[str]:
    """A tagged artist against its tag: colour, and a series' marker and line."""
    gid = artist.get_gid()
    want = _expected(gid)
    if want is None:
        return [f"unknown tag {gid!r}"]
    out = []
    got = _colour(artist)
    if got is not None and got != want["color"].lower():
        out.append(f"{gid} drawn {got}, its colour is {want['color']}")
    if hasattr(artist, "get_marker") and "marker" in want:
        ls, marker = artist.get_linestyle(), artist.get_marker()
        if marker not in ("None", "", None) and marker != want["marker"]:
            out.append(f"{gid} with marker {marker!r}, its marker is {want['marker']!r}")
        rule = marker in ("None", "", None)     # a rule: any dash, in its series' colour
        if ls not in ("None", "", " ") and ls != want["linestyle"] and not rule:
            out.append(f"{gid} with line {ls!r}, its line is {want['linestyle']!r}")
    return out


def _legend_problems(ax, artists) -> list[str]:
    """Each legend entry: a kind in the palette's colour, a tagged artist, or (untagged) neither a
    source of numbers nor in a colour that reads as a series'."""
    kinds = {v[1]: k for k, v in PALETTE.items()} | {v: k for k, v in GEMM_LABELS.items()}
    by_label = {}
    for a in artists:
        by_label.setdefault(a.get_label(), a)
    for c in ax.containers:             # a bar chart's label is its container's
        if getattr(c, "patches", None):
            by_label.setdefault(c.get_label(), c.patches[0])
    out = []
    legend = ax.get_legend()
    for handle, text in zip(legend.legend_handles, legend.get_texts()):
        name, colour = text.get_text(), _colour(handle)
        if name in kinds:
            want = PALETTE[kinds[name]][0].lower()
            if colour != want:
                out.append(f"legend {name!r} in {colour}, the palette's is {want}")
            continue
        drawn = by_label.get(name)
        if drawn is not None and drawn.get_gid():
            continue
        if _SOURCE_WORDS.search(name):
            out.append(f"legend {name!r} names a source of numbers but is not drawn in a "
                       "series' style (sim.plot.style)")
        elif like := _like_a_series(colour):
            out.append(f"legend {name!r} in {colour}, which reads as series {like!r}'s "
                       f"{SERIES[like]['color']}")
    return out


_CTA, _STAGE = re.compile(r"^cta\d+\."), re.compile(r"\[\d+\]$")


class UnknownOp(KeyError):
    """An operation with no entry in the palette: add it to `OPS` (and a kind to `PALETTE`)."""


def kind(op: str) -> str:
    """The palette's kind of an op, a model wait's barrier name or a Proton scope name; raises
    `UnknownOp` for a name it does not know, so that nothing is drawn in a colour it does not own."""
    name = _STAGE.sub("", _CTA.sub("", op))
    if name not in OPS:
        raise UnknownOp(f"no palette entry for {op!r}: add it to sim.plot.OPS")
    return OPS[name]


def color(op: str) -> str:
    return PALETTE[kind(op)][0]


def label(op: str) -> str:
    return PALETTE[kind(op)][1]


_HEIGHT = {"work": 0.8, "latency": 0.5, "wait": 0.3}


class _Bars:
    """The spans of a Gantt, drawn as few artists as the picture allows: on each lane, a run of
    consecutive spans of one kind is one `broken_barh` (one rectangle a span). Runs are drawn in
    the order they start, so spans that overlap on a lane (an actor's exps beside its FMA work)
    are layered exactly as one artist a span would layer them; one artist a span made the
    drawing most of a warm chapter's time."""

    def __init__(self):
        self.runs: list[tuple[float, str, list]] = []     # (lane, kind, [(start, length)])
        self.last: dict[float, int] = {}                   # lane -> its latest run

    def add(self, y: float, start: float, length: float, op: str) -> str:
        """One span of `op` on lane y; returns its kind."""
        k = kind(op)
        n = self.last.get(y)
        if n is not None and self.runs[n][1] == k:
            self.runs[n][2].append((start, length))
        else:
            self.last[y] = len(self.runs)
            self.runs.append((y, k, [(start, length)]))
        return k

    def draw(self, ax) -> None:
        """Each run in its kind's colour and height (`PALETTE`, `_HEIGHT`): what `broken_barh`
        draws, but the data limits are taken once for all runs, not once a run (each update
        was most of a warm chapter's drawing); the axes' limits come out the same."""
        corners = []
        for y, k, spans in self.runs:
            c, _, style = PALETTE[k]
            y0, y1 = y - _HEIGHT[style] / 2, y + _HEIGHT[style] / 2
            boxes = [[(x, y0), (x, y1), (x + w, y1), (x + w, y0)] for x, w in spans]
            ax.add_collection(PolyCollection(boxes, color=c, linewidth=0, gid=f"kind:{k}"),
                              autolim=False)
            corners += [(min(x for x, _ in spans), y0), (max(x + w for x, w in spans), y1)]
        if corners:
            ax.update_datalim(corners)
            ax.autoscale_view()


def _legend(ax, kinds) -> None:
    """The kinds drawn, in the palette's order, under the palette's labels (a GEMM's own where
    it has them: `legend_label`)."""
    handles = [Patch(color=PALETTE[k][0], label=legend_label(k, kinds), gid=f"kind:{k}")
               for k in PALETTE if k in kinds]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)


def gantt(trace: Trace, title: str = "", window: tuple[float, float] | None = None,
          clock_hz: float | None = None, ax=None, split: tuple[str, ...] = ()):
    """Lanes for each unit, then for each warpgroup; blank = idle. Full-height bars are a unit's
    work, half-height ones a warpgroup's latency (its row max, its dependency stalls), thin ones a
    wait on a barrier or a turn; colours and labels are `PALETTE`'s.
    `window` = (start, end) in clk to zoom into the steady state. Each unit named in `split`
    also gets one lane per warpgroup under its own (``tensor ← consumer0``): that warpgroup's
    work on the unit alone, so whose work fills which gap is visible where the unit's lane
    merges them."""
    actors = trace.actors()
    lanes = []
    for u in UNITS:
        if trace.busy_time(u) > 0:
            lanes.append(f"unit: {u}")
            if u in split:
                lanes += [_sublane(u, a) for a in actors
                          if any(i.unit == u and i.actor == a for i in trace.intervals)]
    lanes += actors
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 0.45 * len(lanes) + 1.2))
    y = {lane: len(lanes) - 1 - n for n, lane in enumerate(lanes)}
    lo, hi = window or (0.0, max((i.end for i in trace.intervals), default=1.0))
    scale = 1e6 / clock_hz if clock_hz else 1.0
    seen, bars = set(), _Bars()
    for i in trace.intervals:
        if i.end < lo or i.start > hi:
            continue
        for lane in (f"unit: {i.unit}", _sublane(i.unit, i.actor), i.actor):
            if lane in y:
                seen.add(bars.add(y[lane], i.start * scale, i.length * scale, i.op))
    for actor, what, s, e in trace.waits:
        if e < lo or s > hi or actor not in y:
            continue
        seen.add(bars.add(y[actor], s * scale, (e - s) * scale, what))
    bars.draw(ax)
    ax.set_yticks(list(y.values()), list(y.keys()))
    ax.set_xlim(lo * scale, hi * scale)
    ax.set_xlabel("µs" if clock_hz else "SM clock cycles")
    ax.set_title(title)
    _legend(ax, seen)
    ax.figure.tight_layout()
    return ax


def _sublane(unit: str, actor: str) -> str:
    return f"{unit} ← {actor}"


def steady_window(trace: Trace, fraction: float = 0.25) -> tuple[float, float]:
    """A window of `fraction` of the run from its middle, away from prologue and epilogue."""
    end = max(i.end for i in trace.intervals)
    mid = end / 2
    return mid - fraction * end / 2, mid + fraction * end / 2


def utilization_bars(rows: dict[str, dict[str, float]], title: str = "", ax=None):
    """rows: variant -> {unit: utilization}. Grouped bars, one group per variant, each unit in
    the colour of its work in the timelines (`UNIT_KIND`)."""
    units = [u for u in UNITS if any(r.get(u, 0) > 0 for r in rows.values())]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.3 * len(rows) + 3, 3.6))
    width = 0.8 / len(units)
    for k, u in enumerate(units):
        xs = [n + k * width for n in range(len(rows))]
        ax.bar(xs, [r.get(u, 0) for r in rows.values()], width, label=u, **unit_style(u))
    ax.set_xticks([n + 0.4 - width / 2 for n in range(len(rows))], list(rows), rotation=20)
    ax.set_ylim(0, 1)
    ax.set_ylabel("busy fraction (useful work)")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=len(units))
    ax.figure.tight_layout()
    return ax


def ablation(model: dict[str, float], preset: str, paper: dict[str, float] | None = None,
             measured: dict[str, float] | None = None, peak: float | None = None,
             title: str = "", ax=None):
    """TFLOP/s per variant: the model on `preset` (a hardware name, e.g. "h100") as bars, the
    paper's and our measured numbers as markers, the tensor peak as a rule; each in its series'
    style (`SERIES`)."""
    names = list(model)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.1 * len(names) + 3, 3.8))
    xs = range(len(names))
    ax.bar(xs, [model[n] for n in names], 0.6, label=f"model, {preset} preset",
           **style(f"model {preset}", "bars"))
    for series, name in ((paper, "paper"), (measured, "measured")):
        pts = [(x, series[n]) for x, n in zip(xs, names) if n in (series or {})]
        if pts:
            ax.plot(*zip(*pts), markersize=9, zorder=3, label=name, **style(name, "points"))
    if peak:
        ax.axhline(peak, linewidth=1, label="tensor peak", **style("bound", "rule"))
    ax.set_xticks(list(xs), names, rotation=20)
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax


def lane_rows(ax, rows: list[tuple[str, list]], window: tuple[float, float]):
    """Named lanes of spans [(scope, start, end)] in clk, top to bottom, on one time axis: the
    measured-vs-model figure (fidelity/lanes.py). Scope names take the palette's kinds, so a
    kernel's "QK" is drawn as the model's QKᵀ and each kind of wait in its own colour."""
    lo, hi = window
    seen, bars = set(), _Bars()
    for k, (_label, spans) in enumerate(rows):
        y = len(rows) - 1 - k
        for n, s, e in spans:
            if e < lo or s > hi:
                continue
            seen.add(bars.add(y, s, e - s, n))
    bars.draw(ax)
    ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)])
    ax.set_xlim(lo, hi)
    ax.set_xlabel("SM clock cycles")
    _legend(ax, seen)
    return ax
