"""Grader for chapter 00: the student's cycle counts against the model's, step by step."""
import random

import pytest

from exercises.grading import harness
from sim import H100, H200, measure_softmax, measure_wgmma

# (rows, n, k, dtype, a_from_smem) cases and the model's answers, computed before any submission runs.
WGMMA = [(64, 176, 128, "fp16", True), (64, 128, 176, "fp16", False), (128, 256, 64, "bf16", True),
         (64, 64, 64, "fp16", True)]
WGMMA_REF = [measure_wgmma(H100, *c) for c in WGMMA]
SOFTMAX = [(64, 176), (64, 128), (128, 80)]
SOFTMAX_REF = [measure_softmax(H100, r, n) for r, n in SOFTMAX]
MASKED_REF = [measure_softmax(H100, r, n, masked=True) for r, n in SOFTMAX]
rng = random.Random(20261202)
FP8 = [(64 * rng.randint(1, 2), 16 * rng.randint(1, 16), 16 * rng.randint(1, 12), "fp8", rng.random() < .5)
       for _ in range(6)]
FP8_REF = [measure_wgmma(H200, *c) for c in FP8]
SLOW_HW = H100.with_(wgmma_overhead_clk=11.0, sfu_exp_per_clk=8, softmax_stall_per_elem=0.1)
OTHER = [(64, 96, 32, "fp16", True), (192, 48, 80, "fp16", False)]
OTHER_REF = [measure_wgmma(SLOW_HW, *c) for c in OTHER]
OTHER_SOFTMAX_REF = measure_softmax(SLOW_HW, 64, 112, masked=True)


def sub():
    return harness.load_submission(__file__, "rates.py")


@pytest.mark.points(2)
def test_wgmma_fp16():
    """wgmma group cycles, fp16/bf16, SS and RS, tab. 2 shapes."""
    s = sub()
    for case, ref in zip(WGMMA, WGMMA_REF):
        assert s.wgmma_group_clk(H100, *case) == pytest.approx(ref, rel=1e-6), case


@pytest.mark.points(2)
def test_softmax():
    """Softmax cycles of one warpgroup on an unmasked block."""
    s = sub()
    for (r, n), ref in zip(SOFTMAX, SOFTMAX_REF):
        assert s.softmax_clk(H100, r, n) == pytest.approx(ref, rel=1e-6), (r, n)


@pytest.mark.points(1)
def test_softmax_masked():
    """A masked block pays the select on top of the max."""
    s = sub()
    for (r, n), ref in zip(SOFTMAX, MASKED_REF):
        assert s.softmax_clk(H100, r, n, masked=True) == pytest.approx(ref, rel=1e-6), (r, n)


### BEGIN HIDDEN TESTS
@pytest.mark.points(1)
def test_wgmma_fp8_random():
    """fp8 shapes drawn at random: half the math, one-byte operands."""
    s = sub()
    for case, ref in zip(FP8, FP8_REF):
        assert s.wgmma_group_clk(H200, *case) == pytest.approx(ref, rel=1e-6), case


@pytest.mark.points(1)
def test_other_hardware():
    """The answer follows the Hardware it is given, not the H100's numbers."""
    s = sub()
    for case, ref in zip(OTHER, OTHER_REF):
        assert s.wgmma_group_clk(SLOW_HW, *case) == pytest.approx(ref, rel=1e-6), case
    assert s.softmax_clk(SLOW_HW, 64, 112, masked=True) == pytest.approx(OTHER_SOFTMAX_REF, rel=1e-6)
### END HIDDEN TESTS
