"""Hidden tests of chapter 05 (never released): tiles and a Hardware drawn afresh each run."""
import random

import pytest

from exercises.grading import harness
from sim import H200_DATASHEET as DATASHEET

pub = harness.public(__file__, "test_idle.py")
rng = random.SystemRandom()              # drawn afresh each grading run: no table can hold them
OTHER_HW = DATASHEET.with_(wgmma_overhead_clk=rng.uniform(6, 24),
                           sfu_exp_per_clk=rng.choice([8, 32]), wgmma_latency_clk=rng.uniform(40, 160))
TILES = [(DATASHEET, rng.choice([64, 80, 96, 128]), 64), (DATASHEET, rng.choice([64, 80]), 256),
         (OTHER_HW, rng.choice([96, 112, 128, 144]), 128)]
OTHER = [(hw, bn, d, pub.true_idle(*pub.measured(hw, bn, d))) for hw, bn, d in TILES]


@pytest.mark.points(2)
def test_predict_other_tiles_and_hardware():
    """Other tiles, and a Hardware with other overhead, SFU rate and latency."""
    s = pub.sub()
    for hw, bn, d, ref in OTHER:
        assert s.predict_ws_idle(hw, bn, d) == pytest.approx(ref, abs=1e-3), (bn, d)
