"""Trace metrics and export."""
from sim.trace import Trace


def make():
    t = Trace()
    t.busy("consumer0", "tensor", "QKᵀ", 0, 100, ("kv", 0), work=80)
    t.busy("consumer0", "tensor", "QKᵀ", 100, 200, ("kv", 0), work=80)    # merges
    t.busy("consumer1", "sfu", "softmax: exp", 150, 250, ("kv", 0))
    t.busy("producer", "tma", "load K", 300, 400, ("kv", 1))
    t.wait("consumer1", "k.full[0]", 0, 150)
    return t


def test_merge_utilization_and_gaps():
    t = make()
    assert len([i for i in t.intervals if i.unit == "tensor"]) == 1
    assert t.span == 400
    u = t.utilization()
    assert u["tensor"] == 160 / 400 and u["sfu"] == 100 / 400 and u["tma"] == 100 / 400
    assert t.idle_gaps("tensor") == [(200, 400)]
    assert t.idle_gaps("tma") == [(0, 300)]


def test_chrome_export():
    doc = make().to_chrome(clock_hz=1e9)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    # each busy interval appears on its unit's lane and its actor's lane; the wait on the actor's
    assert len(xs) == 2 * 3 + 1
    qk = [e for e in xs if e["name"] == "QKᵀ"]
    assert qk[0]["ts"] == 0 and qk[0]["dur"] == 0.2          # 200 clk at 1 GHz = 0.2 µs
