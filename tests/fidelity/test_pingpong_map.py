"""The pingpong map's claims (`fidelity/pingpong.py`, chapter 03): where the model says pingpong
pays, that it says so where we measured it, and why."""
import pytest

from fidelity.pingpong import (attention_point, gemm_point, measured_cycles, measured_points,
                               placed)
from sim.hardware import H100, H200

MEASURED = measured_points()
ATTENTION = [m for m in MEASURED if m.workload == "attention"]
# GEMM pairs big enough that the kernel, not the host, is timed (1024³ and 2048³ run shorter
# than Triton's launch path: fidelity/README.md, "Host time is not the kernel's")
GEMM = [m for m in MEASURED if m.workload == "gemm" and m.shape[0] * m.shape[1] >= 4096 ** 2]


def test_measured_pairs_found():
    assert len(ATTENTION) >= 3 and len(GEMM) >= 20


@pytest.mark.parametrize("m", ATTENTION, ids=lambda m: f"{m.shape}")
def test_attention_no_gain_where_none_measured(m):
    """At tab. 2's shape our H200 has pingpong at −2.6 .. +2.0 %; the model predicts under +3 %,
    within 4 points of each measured pair."""
    pt = placed(m)
    assert abs(m.gain) < 0.03
    assert pt.gain < 0.03 and abs(pt.gain - m.gain) <= 0.04, (pt.gain, m.gain)


@pytest.mark.parametrize("m", GEMM, ids=lambda m: f"{m.run}-{m.shape}")
def test_gemm_gain_at_measured_points(m):
    """Every GEMM pair within 7 points of the model (the same shape moves by up to 6.6 points
    between h200.json's sections: 16384²×1024 +1.3 % in gemm_probe, −5.3 % in gemm); where the machine orders the pair
    (rounds apart) by more than 3 %, the model has the same sign."""
    pt = placed(m)
    assert abs(pt.gain - m.gain) <= 0.07, (pt.gain, m.gain)
    if m.resolved and abs(m.gain) > 0.03:
        assert (pt.gain > 0) == (m.gain > 0)


def test_gemm_gain_median_over_runs():
    """Per shape and dtype, the median of its runs' gains within 5 points of the model."""
    by = {}
    for m in GEMM:
        by.setdefault(m.shape, []).append(m)
    for shape, ms in by.items():
        gains = sorted(m.gain for m in ms)
        median = (gains[(len(gains) - 1) // 2] + gains[len(gains) // 2]) / 2
        assert abs(placed(ms[0]).gain - median) <= 0.05, (shape, placed(ms[0]).gain, median)


def test_d128_gain_falls_with_s_on_h100():
    """At d 128 the model's ws consumers collide at a CTA's start and then drift into
    alternation: the gain is a start-up cost, falling with S, and within ±3 % from S 4K on."""
    gains = [attention_point(H100, s, 128).gain for s in (512, 1024, 2048, 4096, 8192, 16384)]
    assert all(a > b for a, b in zip(gains, gains[1:])), gains
    assert gains[0] > gains[-1] + 0.02 and max(abs(g) for g in gains[3:]) < 0.03


@pytest.mark.parametrize("hw", [H100, H200], ids=lambda h: h.name)
def test_d256_pays_and_why(hw):
    """At d 256 a block's GEMMs are long beside its softmax and ws's consumers stay collided:
    pingpong +8 % or more, and the collided blocks' idle is what it removes."""
    d256, d128 = attention_point(hw, 8192, 256), attention_point(hw, 8192, 128)
    assert d256.gain >= 0.08
    assert d256.idle["collision"] > 0.10 > 0.02 > d128.idle["collision"]
    assert d256.idle["collided"] > 0.5 > d128.idle["collided"]


@pytest.mark.parametrize("hw", [H100, H200], ids=lambda h: h.name)
def test_power_cap_takes_cycles_back(hw):
    """Both presets are the die under a power cap: pingpong's saved cycles lower its clock."""
    cap = attention_point(hw, 8192, 256)
    assert cap.clock_change < -0.02 and cap.gain < cap.cycles_gain - 0.03


def test_gemm_epilogue_share_sets_the_gain():
    """GEMM on h200: the epilogue ws exposes is a large share of its CTA at K 256 and a rounding
    error at K 8192, and the model's gain follows it."""
    short, long = gemm_point(H200, 8192, 8192, 256), gemm_point(H200, 8192, 8192, 8192)
    assert short.idle["epilogue"] > 0.05 > 0.01 > long.idle["epilogue"]
    assert short.gain > 0.05 and long.gain < 0.01


def test_sec31_not_on_the_map():
    """The §3.1 gap (tests/model/test_paper.py): nowhere at d 128 from S 4K does the h100 model
    give pingpong the paper's +9 %."""
    assert max(attention_point(H100, s, 128).gain for s in (4096, 8192, 16384)) < 0.09


@pytest.mark.xfail(strict=True, reason="known miss: Nsight Compute has ws_pingpong 8.8 % fewer "
                   "cycles a K/V block than ws (3232 vs 2971, h200-stall.json), the model 1.8 %: "
                   "the model's pingpong is 9 % slow in cycles (its softmax beside the other "
                   "consumer's GEMMs, softmax_beside_mma 2.0, which ws alone chose)")
def test_cycles_gain_as_measured():
    w, p, _, _ = measured_cycles()
    m = next(m for m in ATTENTION if not m.shape[4] and m.shape[5] == 2)
    assert abs(placed(m).cycles_gain - (w / p - 1)) < 0.03
