"""The model against our fa3 across head dim and sequence length
(results/h200-attention-grid.json; `python -m fidelity grid`)."""
import math

import pytest

from fidelity import grid
from sim.hardware import H200
from sim.predict import predict

pytestmark = pytest.mark.skipif(not (grid.RESULTS / grid.GRID_FILE).exists(),
                                reason="no committed attention grid")
SEQ = grid.SEQLENS


@pytest.fixture(scope="module")
def pts():
    return grid.points("h200")


def test_account_is_the_prediction():
    """`account` takes the prediction apart: the same TFLOP/s as `predict`, shares adding to 1."""
    cfg = grid.config(128, 1024, False, grid.kernel_tile(128, False))
    a = grid.account(cfg, H200)
    assert a.tflops == pytest.approx(predict(cfg, H200).tflops, rel=1e-9)
    assert math.fsum(a.shares.values()) == pytest.approx(1.0, abs=1e-6)
    assert a.exps_per_kflop == pytest.approx(1000 / (4 * 128))
    assert a.blocks_per_cta == 1024 / 128


def test_median_error(pts):
    """Achieved: median |error| 4.5 % over the 18 points, 16 within ±10 %."""
    s = grid.summary(pts)
    assert s["points"] == 18
    assert s["median_abs_error"] <= 0.05
    assert s["within_10pct"] >= 16


@pytest.mark.parametrize("causal", [False, True])
def test_trend_across_d_at_16k(pts, causal):
    """At S 16K the rate climbs with d on the machine (exps per FLOP halve with each doubling),
    and the model orders the three head dims the same."""
    measured = grid.trend(pts, 16384, causal)
    model = grid.trend(pts, 16384, causal, key=lambda p: p.model.tflops)
    assert measured[64] < measured[128] < measured[256]
    assert model[64] < model[128] < model[256]


@pytest.mark.parametrize("d, causal", [
    (64, False), (128, False), (256, False), (128, True), (256, True),
    pytest.param(64, True, marks=pytest.mark.xfail(strict=True, reason=(
        "d 64 causal: the machine gains +116 % from S 1K to 16K, the model +84 %: at S 1K its "
        "CTAs walk 5.3 blocks on average and the model's d 64 block is short (+22 % at S 1K)")))])
def test_short_sequences_lose(pts, d, causal):
    """From S 1K to 16K both the machine and the model gain; the model's gain within 10 points of
    the machine's; and the model's fixed costs per CTA fall from S 1K to S 16K."""
    by = {p.S: p for p in pts if p.d == d and p.causal == causal}
    g_meas = by[16384].measured / by[1024].measured - 1
    g_model = by[16384].model.tflops / by[1024].model.tflops - 1
    assert g_meas > 0 and g_model > 0
    assert abs(g_model - g_meas) <= 0.10
    assert by[1024].model.shares["per CTA"] > 5 * by[16384].model.shares["per CTA"]


def test_the_tail_wave(pts):
    """Non-causal CTAs are of one length: the SM-time the tail leaves idle is what the partial last
    wave wastes, (ceil(waves) - waves) / ceil(waves)."""
    for p in pts:
        if not p.causal:
            w, s = p.model.waves, p.model.shares
            assert s["tail"] / (1 - s["launch"]) == pytest.approx(
                (math.ceil(w) - w) / math.ceil(w), abs=1e-3)


@pytest.mark.xfail(strict=True, reason=(
    "every point within ±10 %: fa3 d 64 causal S 1K (+22 %) misses; the model's d 64 blocks are "
    "10-12 % short of Nsight Compute's (fidelity/README.md 'Where it misses'), which the short "
    "causal launches show most"))
def test_every_point_within_10pct(pts):
    assert all(abs(p.error) <= 0.10 for p in pts)
