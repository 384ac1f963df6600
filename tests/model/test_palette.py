"""One palette for every figure: each operation the model emits, each barrier it waits on and each
scope a Proton trace of a real kernel carries has a kind in `sim.plot.PALETTE`, with a colour
no other kind uses and a legend label."""
import functools
import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from sim import attention, gemm
from sim.config import AttentionConfig, GemmConfig
from sim.hardware import H100, H200
from sim.plot import OPS, PALETTE, UnknownOp, gantt, kind, lane_rows
from sim.predict import predict
from sim.trace import Trace

TRACES = Path(__file__).resolve().parents[2] / "results" / "traces"


@functools.cache
def emitted() -> dict[str, set[str]]:
    """Every op name (intervals) and wait name (barriers, latencies) that every attention and GEMM
    variant emits on h100 and h200, small shapes: {name: {"variant on hw", ...}}."""
    out: dict[str, set[str]] = {}
    for hw in (H100, H200):
        runs = [(f"attention {v}", AttentionConfig(batch=1, heads=2, seqlen=1024, headdim=128,
                                                    variant=v, causal=v == "fa3"))
                for v in attention.VARIANTS]
        runs += [(f"gemm {v}", GemmConfig(m=1024, n=1024, k=1024, variant=v))
                 for v in gemm.VARIANTS]
        for name, cfg in runs:
            t = predict(cfg, hw, keep_trace=True).trace
            for op in [i.op for i in t.intervals] + [w for _, w, _, _ in t.waits]:
                out.setdefault(op, set()).add(f"{name} on {hw.name}")
    return out


def proton_scopes() -> set[str]:
    names = set()
    for f in TRACES.glob("*.summary.json"):
        for scopes in json.loads(f.read_text())["roles"].values():
            names |= set(scopes)
    for f in TRACES.glob("*.trace.json"):
        doc = json.loads(f.read_text())
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        names |= {e["name"] for e in events if e.get("ph") in ("X", "B")}
    return names


def test_every_op_every_variant_emits_has_a_kind():
    missing = {}
    for op, where in emitted().items():
        try:
            kind(op)
        except UnknownOp:
            missing[op] = sorted(where)
    assert not missing, f"ops with no palette entry (add them to sim.plot.OPS): {missing}"


def test_every_proton_scope_has_a_kind():
    scopes = proton_scopes()
    assert {"QK", "PV", "softmax", "MMA", "wait K", "wait turn"} <= scopes   # the traces are read
    missing = sorted(s for s in scopes if s not in OPS)
    assert not missing, f"Proton scopes with no palette entry: {missing}"


def test_the_scope_and_the_model_op_are_one_kind():
    assert kind("QK") == kind("QKᵀ") and kind("MMA") == kind("MMA") and kind("PV") == kind("PV")
    assert kind("wait K") == kind("cta0.k.full[1]") == kind("wait full") == kind("ab.full[3]")
    assert kind("wait slot") == kind("v.empty[0]") == kind("ab.empty[2]")
    assert kind("wait turn") == kind("turn") and kind("wait Q") == kind("cta1.q_full")


def test_no_two_kinds_share_a_colour_or_a_label():
    by_colour, by_label = {}, {}
    for k, (colour, label, style) in PALETTE.items():
        assert style in ("work", "latency", "wait"), k
        by_colour.setdefault(colour.lower(), []).append(k)
        by_label.setdefault(label, []).append(k)
    assert all(len(ks) == 1 for ks in by_colour.values()), by_colour
    assert all(len(ks) == 1 for ks in by_label.values()), by_label
    assert set(OPS.values()) <= set(PALETTE)


def test_waits_are_split_by_what_they_wait_for():
    waits = {kind(w) for w in ("k.full[0]", "k.empty[0]", "turn", "q_full")}
    assert len(waits) == 4 and all(PALETTE[k][2] == "wait" for k in waits)


def test_the_row_max_is_not_a_barrier_wait():
    rowmax = kind("softmax: row max")
    assert PALETTE[rowmax][2] == "latency"
    assert rowmax not in {kind(w) for w in ("k.full", "k.empty", "turn", "q_full", "bar.sync")}
    assert "wait" not in PALETTE[rowmax][1]


def test_an_unknown_op_is_reported():
    t = Trace()
    t.busy("consumer0", "tensor", "QKᵀ", 0, 100)
    t.busy("consumer0", "fma", "softmax: teleport", 100, 200)
    with pytest.raises(UnknownOp, match="softmax: teleport"):
        gantt(t)
    t = Trace()
    t.busy("consumer0", "tensor", "QKᵀ", 0, 100)
    t.wait("consumer0", "cta0.mystery[1]", 0, 50)
    with pytest.raises(UnknownOp, match="mystery"):
        gantt(t)
    import matplotlib.pyplot as plt
    _, ax = plt.subplots()
    with pytest.raises(UnknownOp, match="wait forever"):
        lane_rows(ax, [("measured consumer0", [("QK", 0, 10), ("wait forever", 10, 20)])], (0, 20))
    plt.close("all")


def test_the_legend_speaks_the_palettes_labels():
    import matplotlib.pyplot as plt
    t = predict(AttentionConfig(batch=1, heads=2, seqlen=1024, headdim=128, variant="ws_pingpong"),
                H100, keep_trace=True).trace
    ax = gantt(t)
    labels = [x.get_text() for x in ax.get_legend().get_texts()]
    assert set(labels) <= {label for _, label, _ in PALETTE.values()}
    for op in ("QKᵀ", "PV", "softmax: exp", "softmax: row max", "turn"):
        assert PALETTE[kind(op)][1] in labels
    plt.close("all")


# --- one style per source of a number (sim.plot.SERIES) --------------------------------------

def test_no_two_series_look_alike():
    from sim.plot import SERIES
    colours = [s["color"].lower() for s in SERIES.values()]
    assert len(set(colours)) == len(colours), SERIES
    markers = [s["marker"] for s in SERIES.values() if s["marker"]]
    assert len(set(markers)) == len(markers), SERIES


def test_no_setting_reads_as_a_series():
    from sim.plot import SETTINGS, _like_a_series
    assert [c for c in SETTINGS if _like_a_series(c)] == []
    assert _like_a_series("#ff7f0e") == "measured"      # matplotlib's own orange: too near


def test_a_style_names_what_it_knows():
    from sim.plot import style
    with pytest.raises(ValueError, match="no style for series 'model h300'"):
        style("model h300")
    with pytest.raises(ValueError, match="drawn must be one of"):
        style("paper", "pie")


def _figures(draw):
    import matplotlib.pyplot as plt
    plt.close("all")
    draw(plt)
    figs = [plt.figure(n) for n in plt.get_fignums()]
    return figs


def test_the_library_figures_keep_the_palette():
    from sim.plot import ablation, off_palette, steady_window, utilization_bars
    preds = {v: predict(AttentionConfig(batch=1, heads=2, seqlen=1024, headdim=128, variant=v),
                        H100, keep_trace=True) for v in ("ws", "fa3")}

    def draw(plt):
        ablation({v: p.tflops for v, p in preds.items()}, "h100", paper={"fa3": 661},
                 measured={"ws": 500}, peak=H100.peak_tflops)
        utilization_bars({v: p.utilization for v, p in preds.items()})
        gantt(preds["fa3"].trace, window=steady_window(preds["fa3"].trace))
    figs = _figures(draw)
    assert off_palette(figs) == []
    # what was checked: the series' markers, the units' bars, the timelines' spans
    gids = {a.get_gid() for f in figs for ax in f.axes
            for a in [*ax.lines, *ax.patches, *ax.collections]}
    assert {"series:paper", "series:measured", "series:model h100", "series:bound",
            "unit:tensor", "unit:tma", "kind:qk", "kind:exp"} <= gids


def test_off_palette_finds_each_way_out():
    """The drawings a chapter once had: the paper as a red diamond beside another figure's
    purple, the utilization bars with the copy engine and the tensor core swapped, a series
    tagged but drawn in another colour or marker, a legend's kind in the wrong colour."""
    from matplotlib.patches import Patch

    from sim.plot import PALETTE, off_palette, style, unit_style

    def draw(plt):
        _, ax = plt.subplots()
        ax.scatter([0], [661], marker="D", color="#d62728", label="paper")
        ax.legend()
        _, ax = plt.subplots()
        ax.bar([0], [0.8], color=unit_style("tma")["color"], gid="unit:tensor", label="tensor")
        ax.plot([0, 1], [1, 2], **{**style("model h200"), "color": "#ff7f0e"}, label="model")
        ax.plot([0, 1], [1, 2], **{**style("measured"), "marker": "s"}, label="measured")
        ax.legend()
        _, ax = plt.subplots()
        ax.legend(handles=[Patch(color="#000000", label=PALETTE["qk"][1])])
        _, ax = plt.subplots()
        ax.plot([0, 1], [1, 2], "o-", color="#ff7f0e", label="d 128")   # the old default cycle
        ax.legend()
    problems = off_palette(_figures(draw))
    found = "\n".join(problems)
    assert "legend 'paper' names a source of numbers" in found
    assert f"unit:tensor drawn {PALETTE['load_k'][0].lower()}" in found
    assert "series:model h200 drawn #ff7f0e" in found
    assert "series:measured with marker 's'" in found
    assert f"legend {PALETTE['qk'][1]!r} in #000000" in found
    assert "legend 'd 128' in #ff7f0e, which reads as series 'measured'" in found
    assert len(problems) == 6, found
