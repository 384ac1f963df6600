"""Hidden tests of chapter 05 (never released): other tiles and another Hardware."""
import pytest

from exercises.grading import harness
from sim import H100

pub = harness.public(__file__, "test_idle.py")
OTHER_HW = H100.with_(wgmma_overhead_clk=20.0, sfu_exp_per_clk=32, wgmma_latency_clk=120.0)
OTHER = [(hw, bn, d, pub.true_idle(*pub.measured(hw, bn, d)))
         for hw, bn, d in ((H100, 128, 64), (H100, 80, 256), (OTHER_HW, 128, 128))]


@pytest.mark.points(2)
def test_predict_other_tiles_and_hardware():
    """Other tiles, and a Hardware with other overhead, SFU rate and latency."""
    s = pub.sub()
    for hw, bn, d, ref in OTHER:
        assert s.predict_ws_idle(hw, bn, d) == pytest.approx(ref, abs=1e-3), (bn, d)
