"""The h200 preset's copy costs come from the GEMM probe traces (`results/traces/gemm_*_s2`,
`_s3`) and the L2 latency microbenchmark, and the copy rate settles where L2 lets it.

* ``tma_link_bytes_per_clk``: the slope of the committed L2 latency rows;
* ``tma_hbm_latency_clk``: re-derived from the committed GEMM probe traces — each refill's
  flight (producer's ``TMA issue`` end → the consumer passing ``full``) less the bytes at the
  link rate and the consumer's wake-up;
* the fixed point: a latency-bound ring copies at the link rate, the bandwidth-bound 128×128
  pingpong GEMM at no more than its share of L2.
"""
import json
import statistics

import pytest

from records import trace
from sim.config import GemmConfig
from fidelity.preset import MICRO, tma_link_rate
from sim.hardware import H200
from sim.predict import copy_rate, predict

PROBES = {  # trace -> (bytes a k-step, ring depth)
    "gemm_ws_s2": ((128 + 256) * 64 * 2, 2),
    "gemm_ws_pingpong_s2": ((192 + 128) * 64 * 2, 2),
    "gemm_ws_pingpong_s3": ((192 + 128) * 64 * 2, 3),
}


def test_link_rate_is_the_latency_rows_slope():
    rows = [r for r in json.loads(MICRO.read_text())["micro"]["rows"]
            if r["bench"] == "tma_latency" and r["mode"] == "l2"]
    small, big = min(rows, key=lambda r: r["box_bytes"]), max(rows, key=lambda r: r["box_bytes"])
    two_point = (big["box_bytes"] - small["box_bytes"]) / (
        big["latency_clk_median"] - small["latency_clk_median"])
    assert H200.tma_link_bytes_per_clk == tma_link_rate(MICRO)
    assert H200.tma_link_bytes_per_clk == pytest.approx(two_point, rel=0.1)
    assert 100 < H200.tma_link_bytes_per_clk < 125      # above the 36-59 B/clk share of L2


@pytest.mark.parametrize("name", sorted(PROBES))
def test_hbm_latency_from_each_probe(name):
    nbytes, stages = PROBES[name]
    tr, summary = trace.load(name)
    assert summary["tile"]["stages"] == stages
    flights = [r["flight"] for c in trace.read_events(tr).values()
               for r in trace.hand_offs(c["lanes"], stages) if "flight" in r and r["exposed"] > 150]
    assert len(flights) > 100
    not_latency = nbytes / H200.tma_link_bytes_per_clk + H200.mbarrier_clk   # the bytes, the wake
    assert statistics.median(flights) - not_latency == pytest.approx(H200.tma_hbm_latency_clk,
                                                                     rel=0.05)
    # the whole run's median (in the summary) says the same as the one CTA kept in the trace
    whole = summary["hand_off"]["flight"]["median"] - not_latency
    assert whole == pytest.approx(H200.tma_hbm_latency_clk, rel=0.05)
    assert H200.tma_hbm_latency_clk > 2.5 * H200.tma_latency_clk    # not an L2 hit


def test_copy_rate_fixed_point():
    link, share = H200.tma_link_bytes_per_clk, H200.l2_bytes_per_clk_per_sm
    assert copy_rate(H200, 0.3) == link                  # L2 has room: the link
    assert copy_rate(H200, 1.0) == pytest.approx(share)  # every SM always pulling: the share
    # settled per kernel: the ws GEMM's ring at the link on our H200; with a quarter of its L2
    # bandwidth the same kernel is bandwidth-bound, and the SMs then ask for no more than L2 gives
    cfg = GemmConfig(variant="ws", stages=3)
    assert _settled(cfg, H200)[0] == pytest.approx(link)
    starved = H200.with_(l2_bytes_per_s=H200.l2_bytes_per_s / 4)
    rate, busy, hw = _settled(cfg, starved)
    assert rate < link / 2 and busy > 0.9
    assert busy * rate <= hw.l2_bytes_per_clk_per_sm * 1.02
    assert predict(cfg, starved).tflops < 0.7 * predict(cfg, H200).tflops


def _settled(cfg, hw):
    """(copy rate, copy engine busy, hardware) the steady-state ws GEMM settles at."""
    from sim import gemm
    from sim.predict import clocked
    cfg = gemm.prepare(cfg, hw)

    def steady(h):
        return gemm.simulate(cfg, h, 2 * cfg.consumers, 8192 // cfg.block_k)
    at = clocked(hw, steady)
    clk, tr = steady(at)
    return at.tma_bytes_per_clk, tr.utilization(clk)["tma"], at


def test_hand_offs_on_a_made_up_lane():
    """Two slots, k-steps every 1000 clk: MMA k ends at 1000k + 300 (releasing k-1), the
    producer is blocked until 40 clk later, issues for 80, and the consumer passes `full` of
    block k+1 at 1000(k+1) + 100 after waiting since 1000k + 300 + 10."""
    consumer, producer = [], []
    for k in range(6):
        t = 1000 * k
        consumer += [("wait full", t - 690 if k else t, t + 100), ("MMA", t + 100, t + 300)]
        producer += [("wait slot", t + 200, t + 340), ("TMA issue", t + 340, t + 420)]
    lanes = {"consumer0": consumer, "producer": producer}
    recs = trace.hand_offs(lanes, stages=2)
    assert len(recs) == 4                 # k = 1..4 release blocks 0..3, refilled as 2..5
    for r in recs:
        assert r["hand_off"] == 800 and r["wake"] == 40 and r["issue"] == 80
        assert r["flight"] == 680 and r["exposed"] == 790
