"""Hidden tests of chapter 00 (never released): shapes and a Hardware drawn afresh each grading
run from the system's entropy, so no table of answers can hold them."""
import random

import pytest

from exercises.grading import harness
from sim import H200, measure_softmax, measure_wgmma
from sim import H200_DATASHEET as DATASHEET

rng = random.SystemRandom()              # a private draw each grading run: nothing to memorise
FP8 = [(64 * rng.randint(1, 2), 16 * rng.randint(1, 16), 16 * rng.randint(1, 12), "fp8",
        rng.random() < .5) for _ in range(6)]
FP8_REF = [measure_wgmma(H200, *c) for c in FP8]
SLOW_HW = DATASHEET.with_(wgmma_overhead_clk=rng.uniform(4, 24), sfu_exp_per_clk=rng.choice([8, 32]),
                          softmax_stall_per_elem=rng.uniform(0.02, 0.2))
OTHER = [(64 * rng.randint(1, 2), 16 * rng.randint(1, 8), 16 * rng.randint(1, 10), "fp16",
          rng.random() < .5) for _ in range(3)]      # shapes one consumer warpgroup can hold
OTHER_SOFTMAX = rng.choice([(64, 16 * rng.randint(2, 12)), (128, 16 * rng.randint(2, 9))])
OTHER_REF = [measure_wgmma(SLOW_HW, *c) for c in OTHER]
OTHER_SOFTMAX_REF = measure_softmax(SLOW_HW, *OTHER_SOFTMAX, masked=True)


def sub():
    return harness.submission(__file__, "rates.py")


@pytest.mark.points(1)
def test_wgmma_fp8_random():
    """fp8 shapes drawn at random: half the math, one-byte operands."""
    s = sub()
    for case, ref in zip(FP8, FP8_REF):
        assert s.wgmma_group_clk(H200, *case) == pytest.approx(ref, rel=1e-6), case


@pytest.mark.points(1)
def test_other_hardware():
    """The answer follows the Hardware it is given, not the datasheet preset's numbers."""
    s = sub()
    for case, ref in zip(OTHER, OTHER_REF):
        assert s.wgmma_group_clk(SLOW_HW, *case) == pytest.approx(ref, rel=1e-6), case
    assert s.softmax_clk(SLOW_HW, *OTHER_SOFTMAX, masked=True) == pytest.approx(
        OTHER_SOFTMAX_REF, rel=1e-6)
