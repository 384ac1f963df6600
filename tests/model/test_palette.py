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
