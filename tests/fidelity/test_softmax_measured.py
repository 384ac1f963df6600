"""The model's softmax against the kernels' own, timed on the H200 (instruments/micro/softmax.py,
results/h200-softmax.json).

Measured per 64×128 round (softmax + rescale of O + fp16 pack of P, on tiles in registers): one
warpgroup alone 851 clk; two side by side in one partition 1228 (1441 with a `bar.sync` a round);
one beside a second warpgroup's softmax 1165; beside a warpgroup's stream of wgmmas 1231-1247.
The model runs the same rounds (`rounds`): what it gets right is the shape — two warpgroups hide
much of each other's softmax, a busy tensor core slows the one beside it — and held here. Its
softmax is slower than the microbenchmark's everywhere (1083 alone on `h200`): its constants are
chosen so that the six kernels' cycles come right (`python -m fidelity calibrate --softmax`,
results/h200-stall.json), and inside those kernels the softmax is slower than beside the
microbenchmark's same work (Nsight Compute: 1350-1760 clk a block). That gap is held as a strict xfail and as a bound, so a change to it is
noticed."""
import json
from pathlib import Path

import pytest
import simpy

from records import RESULTS as RESULTS_DIR
from sim.attention.cta import AttentionCTA
from sim.config import AttentionConfig
from sim.hardware import H200
from sim.trace import Trace

RESULTS = RESULTS_DIR / "h200-softmax.json"
ROWS = json.loads(RESULTS.read_text())["rows_q8"]


def measured(warpgroups: int, beside: str = "alone", releases: int = 0) -> float:
    """The measured row's clk a round (the timed softmax ran the whole time: 2000 rounds)."""
    (row,) = [r for r in ROWS if r["warpgroups"] == warpgroups and r["beside"] == beside
              and r["releases"] == releases and r["iters"] == 2000
              and r.get("gemm_iters", 4000) == 4000 and r["ok"]]
    return row["clk_per_round"]


def rounds(warpgroups: int = 1, beside: str | None = None, sync: bool = False, hw=H200,
           n: int = 12) -> float:
    """Model clk a round of warpgroup 0: `warpgroups` running the rounds side by side (with
    `sync`, meeting at a CTA barrier after each, as `releases` does), or one beside a second
    warpgroup that runs the same rounds (`beside="softmax"`) or issues Q·Kᵀ groups back to back
    (`beside="mma"`). The first two rounds are the warm-up."""
    env = simpy.Environment()
    cfg = AttentionConfig(batch=1, heads=1, seqlen=1024, headdim=128, variant="ws",
                          block_m=128, block_n=128, consumers=2, stages=2)
    cta = AttentionCTA(env, hw, cfg, Trace(), n_blocks=8)
    times = []

    def step(w):
        yield from cta.softmax(w, 0)
        yield from cta.rescale(w, 0)
        yield from cta.pack(w, 0)

    def timed(w):
        for _ in range(n):
            times.append(env.now) if w == 0 else None
            yield from step(w)
            if sync:
                yield from cta.sync_consumers(w)
        times.append(env.now) if w == 0 else None

    def forever(body):
        while True:
            yield from body()

    procs = [env.process(timed(w)) for w in range(warpgroups)]
    if beside == "softmax":
        env.process(forever(lambda: step(1)))
    elif beside == "mma":
        env.process(forever(lambda: (yield cta.qk(1, 0))))
    env.run(until=simpy.AllOf(env, procs))
    return (times[-1] - times[2]) / (n - 2)


def test_the_measurement_is_there_and_checked():
    assert all(r["ok"] for r in ROWS)
    alone = measured(1)
    assert 700 < alone < measured(2) < 2 * alone                  # two in step hide each other
    assert measured(1, "beside a warpgroup's wgmmas") > 1.3 * alone
    assert measured(2, releases=3) > measured(2)                  # a bar.sync a round costs


def test_two_side_by_side_hide_each_other():
    """As on the H200 (1228 for two against 851 alone): well under twice one alone."""
    assert rounds(2) < 1.5 * rounds(1)
    assert rounds(2) < rounds(2, sync=True)                       # the barrier keeps them in step


def test_a_busy_tensor_core_slows_the_softmax_beside_it():
    """h200-softmax.json: +46 % beside a warpgroup's stream of wgmmas; the model's, +68 %, must show it."""
    assert rounds(1, beside="mma") > 1.3 * rounds(1)
    assert rounds(1, beside="mma", hw=H200.with_(softmax_beside_mma=1.0)) < 1.05 * rounds(1)


def test_the_gap_is_what_it_was():
    """The model's softmax alone is 1.0-1.35× the microbenchmark's (1.27 with the `--softmax` fit)."""
    assert measured(1) < rounds(1) < 1.35 * measured(1)


@pytest.mark.xfail(strict=True, reason="known gap: the model's softmax stands for in-kernel costs")
def test_model_softmax_alone_within_ten_percent():
    assert rounds(1) == pytest.approx(measured(1), rel=0.10)
