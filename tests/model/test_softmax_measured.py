"""The model's softmax against the kernels' own, timed on the H200 (kernels/micro/softmax.py,
runs Q5-Q6, kernels/results/h200-softmax.json) — a known gap, held as strict xfails.

Measured per 128-column block (softmax + rescale of O + fp16 pack of P): one warpgroup alone
853 clk; two warpgroups in step in one partition 1210-1234; one beside a second warpgroup's
softmax 1170, beside a warpgroup's wgmmas 1231. The model (h200 preset, with the softmax stall
tab. 2 fits on h100) takes 1562 alone and 2484 for two in step. Its end-to-end predictions are
within ±10 % for the warp-specialized kernels *because* of that: with a softmax timed as
measured they run 6-18 % fast (kernels/NOTES.md, runs Q5-Q6) — the slow softmax stands in for
costs the model does not have yet. A change that brings these within 10 % must say what it did
about the rest."""
import json
from pathlib import Path

import pytest
import simpy

from sim.attention.cta import AttentionCTA
from sim.config import AttentionConfig
from sim.hardware import H200
from sim.trace import Trace

RESULTS = Path(__file__).resolve().parents[2] / "kernels" / "results" / "h200-softmax.json"
ROWS = json.loads(RESULTS.read_text())["rows"]


def measured(warpgroups: int) -> float:
    (row,) = [r for r in ROWS if r["warpgroups"] == warpgroups and r["ok"]]
    return row["clk_per_round"]


def model_block(warpgroups: int, hw=H200) -> float:
    """Cycles for `warpgroups` consumers that start the softmax and rescale of one block at
    once, nothing else on the SM (the micro's setting)."""
    env = simpy.Environment()
    cfg = AttentionConfig(batch=1, heads=1, seqlen=1024, headdim=128, variant="ws",
                          block_m=64 * warpgroups, block_n=128, consumers=warpgroups, stages=2)
    cta = AttentionCTA(env, hw, cfg, Trace(), n_blocks=8)

    def one(w):
        yield from cta.softmax(w, 0)
        yield from cta.rescale_o(w, 0)

    for w in range(warpgroups):
        env.process(one(w))
    env.run()
    return env.now


def test_the_measurement_is_there_and_checked():
    assert {r["warpgroups"] for r in ROWS} == {1, 2} and all(r["ok"] for r in ROWS)
    assert 700 < measured(1) < measured(2) < 2 * measured(1)   # two in step hide each other


def test_model_is_slower_than_measured():
    """What the gap is today (so a change of it shows): the model's softmax is slower than the
    kernels' alone and, more so, two side by side."""
    assert model_block(1) > 1.3 * measured(1)
    assert model_block(2) > 1.6 * measured(2)


@pytest.mark.parametrize("warpgroups", [1, 2])
@pytest.mark.xfail(strict=True, reason="known gap: the model's softmax stands in for missing costs")
def test_model_softmax_within_ten_percent(warpgroups):
    assert model_block(warpgroups) == pytest.approx(measured(warpgroups), rel=0.10)
