"""Grader for chapter 00: the student's cycle counts against the model's, step by step."""
import pytest

from exercises.grading import forms, harness
from sim import H200_DATASHEET as DATASHEET
from sim import measure_softmax, measure_wgmma

# (rows, n, k, dtype, a_from_smem) cases and the model's answers, computed before any submission runs.
WGMMA = [(64, 176, 128, "fp16", True), (64, 128, 176, "fp16", False), (128, 256, 64, "bf16", True),
         (64, 64, 64, "fp16", True)]
WGMMA_REF = [measure_wgmma(DATASHEET, *c) for c in WGMMA]
SOFTMAX = [(64, 176), (64, 128), (128, 80)]
SOFTMAX_REF = [measure_softmax(DATASHEET, r, n) for r, n in SOFTMAX]
MASKED_REF = [measure_softmax(DATASHEET, r, n, masked=True) for r, n in SOFTMAX]


def sub():
    return harness.submission(__file__, "rates.py")


@pytest.mark.points(2)
def test_wgmma_fp16():
    """wgmma group cycles, fp16/bf16, SS and RS, tab. 2 shapes."""
    s = sub()
    for case, ref in zip(WGMMA, WGMMA_REF):
        got = forms.number(s.wgmma_group_clk(DATASHEET, *case), f"wgmma_group_clk{case}", 0)
        assert got == pytest.approx(ref, rel=1e-6), case


@pytest.mark.points(2)
def test_softmax():
    """Softmax cycles of one warpgroup on an unmasked block."""
    s = sub()
    for (r, n), ref in zip(SOFTMAX, SOFTMAX_REF):
        got = forms.number(s.softmax_clk(DATASHEET, r, n), f"softmax_clk({r}, {n})", 0)
        assert got == pytest.approx(ref, rel=1e-6), (r, n)


@pytest.mark.points(1)
def test_softmax_masked():
    """A masked block pays the select on top of the max."""
    s = sub()
    for (r, n), ref in zip(SOFTMAX, MASKED_REF):
        got = forms.number(s.softmax_clk(DATASHEET, r, n, masked=True),
                           f"softmax_clk({r}, {n}, masked)", 0)
        assert got == pytest.approx(ref, rel=1e-6), (r, n)
