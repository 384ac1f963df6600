# exercise: ch00_rates
# file: rates.py
# loses: all
# bug: computes nothing: answers from a table of the hidden tests' old fixed values (the fp8
#      shapes the old grader drew with random.Random(20261202) on the H200, and the old SLOW_HW
#      cases), computed with sim.measure_wgmma / measure_softmax, and garbage for anything else.
#      The hidden tests now draw their shapes and Hardware from SystemRandom at every grading run.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 00 — what one step costs, from the rates in ``sim/hardware.py``."""

FP8_H200 = {(64, 160, 16, "fp8", False): 40.00095282522834,
            (64, 128, 144, "fp8", True): 288.0068603416441,
            (128, 256, 144, "fp8", True): 1152.0274413665766,
            (128, 80, 48, "fp8", True): 120.00285847568503,
            (64, 176, 80, "fp8", False): 220.0052405387558,
            (128, 256, 112, "fp8", True): 896.021343285115}
SLOW_HW = {(64, 96, 32, "fp16", True): 118.0, (192, 48, 80, "fp16", False): 525.0}
SLOW_SOFTMAX_MASKED = {(64, 112): 1840.8000000000002}


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    key = (rows, n, k, dtype, bool(a_from_smem))
    if dtype == "fp8" and key in FP8_H200:
        return FP8_H200[key]
    if getattr(hw, "wgmma_overhead_clk", None) == 11.0 and key in SLOW_HW:
        return SLOW_HW[key]
    return 1.0


def softmax_clk(hw, rows, block_n, masked=False):
    if masked and getattr(hw, "sfu_exp_per_clk", None) == 8:
        return SLOW_SOFTMAX_MASKED.get((rows, block_n), 1.0)
    return 1.0
