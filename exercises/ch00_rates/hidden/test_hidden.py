"""Hidden tests of chapter 00 (never released): shapes and a Hardware drawn afresh each grading
run from the system's entropy, so no table of answers can hold them."""
import random

import pytest

from exercises.grading import forms, harness
from sim import H200, measure_softmax, measure_wgmma
from sim import H200_DATASHEET as DATASHEET

rng = random.SystemRandom()              # a private draw each grading run: nothing to memorise
# k is drawn from 1..192, most of it not a multiple of 16: the last instruction of a group covers
# a partial k-step (k // 16 and ceil differ); dtypes fp8, bf16 and fp16 all appear. n is any
# wgmma N (a multiple of 8 from 8 to 256), the first of each list an odd multiple of 8 (m64n8k16,
# m64n24k16, ...: an N padded to 16 charges too much).


def _n(most: int, odd: bool = False) -> int:
    """A wgmma N of 8..most (a multiple of 8); with `odd`, an odd multiple of 8."""
    return 8 * (2 * rng.randint(0, most // 16 - 1) + 1) if odd else 8 * rng.randint(1, most // 8)


FP8 = [(64 * rng.randint(1, 2), _n(256, i == 0), k, "fp8", rng.random() < .5)
       for i, k in enumerate([16 * rng.randint(0, 11) + rng.randint(1, 15)] + [rng.randint(1, 192)
                                                                                for _ in range(5)])]
FP8_REF = [measure_wgmma(H200, *c) for c in FP8]
# every rate the two functions may read, changed: an answer with a preset's number typed in fails
SLOW_HW = DATASHEET.with_(
    wgmma_overhead_clk=rng.uniform(4, 24), sfu_exp_per_clk=rng.choice([8, 32]),
    softmax_stall_per_elem=rng.uniform(0.02, 0.2),
    tensor_flop_per_clk=rng.choice([1024, 2048, 8192]),
    fp8_speedup=rng.choice([1.5, 3.0, 4.0]), smem_bytes_per_clk=rng.choice([32, 64, 256]),
    fma_lanes_per_clk=rng.uniform(40, 200), row_reduce_clk=rng.uniform(5, 60),
    softmax_fma_per_elem=rng.uniform(1, 8))
OTHER = [(64 * rng.randint(1, 2), _n(128, i == 0),                  # shapes one warpgroup holds,
          16 * rng.randint(0, 9) + rng.randint(1, 15), dt, rng.random() < .5)  # k not a
         for i, dt in enumerate(("fp16", "bf16", "fp8", "fp8"))]             # multiple of 16
OTHER_SOFTMAX = rng.choice([(64, 16 * rng.randint(2, 12)), (128, 16 * rng.randint(2, 9))])
OTHER_REF = [measure_wgmma(SLOW_HW, *c) for c in OTHER]
OTHER_SOFTMAX_REF = measure_softmax(SLOW_HW, *OTHER_SOFTMAX, masked=True)
# A from registers on a machine whose shared memory is slow beside its tensor core: an RS
# instruction still reads B (n x 16 elements) from shared memory, and here that read takes 2-4
# times its fp16 math (tensor FLOP/clk = ratio * 64 * smem bytes/clk, 64 where the two are equal
# at 2 bytes an element) and 1.5-6 times its fp8 math (ratio * fp8 factor / 2). An RS group
# charged its math alone is short whatever the shape: the shared-memory bound decides every draw.
_RS_SMEM = rng.choice([16, 32, 64])
RS_HW = SLOW_HW.with_(smem_bytes_per_clk=_RS_SMEM,
                      tensor_flop_per_clk=rng.uniform(2, 4) * 64 * _RS_SMEM,
                      fp8_speedup=rng.uniform(1.5, 3))
RS = [(64 * rng.randint(1, 2), _n(256, dt == "bf16"),
       16 * rng.randint(0, 11) + rng.randint(1, 15), dt, False) for dt in ("fp16", "bf16", "fp8")]
RS_REF = [measure_wgmma(RS_HW, *c) for c in RS]
# A from shared memory at small n on a machine where A's read tips the instruction: B's read alone
# (n x 16 elements) is shorter than the math and A's and B's together (64 x 16 + n x 16) longer,
# in fp16 and in fp8. With tensor FLOP/clk = r * 64 * smem bytes/clk, fp16's math over B's read is
# 1/r and over both reads n / (r * (64 + n)): r in 0.55-0.9 puts the math between them for every
# n of 8-48 (n / (64 + n) <= 0.43); fp8's factor 2 * r8 / r does the same for one-byte elements.
# An SS bound that leaves A's read out charges the math: short on every draw (10 % or more).
_SS_SMEM, _SS_R, _SS_R8 = rng.choice([32, 64, 128]), rng.uniform(0.55, 0.9), rng.uniform(0.55, 0.9)
SS_HW = SLOW_HW.with_(smem_bytes_per_clk=_SS_SMEM, tensor_flop_per_clk=_SS_R * 64 * _SS_SMEM,
                      fp8_speedup=2 * _SS_R8 / _SS_R)
SS = [(64 * rng.randint(1, 2), 8 * rng.randint(1, 6),
       16 * rng.randint(0, 11) + rng.randint(1, 15), dt, True) for dt in ("fp16", "bf16", "fp8")]
SS_REF = [measure_wgmma(SS_HW, *c) for c in SS]


def _softmax_hw(fma_over_exp):
    """A drawn Hardware on which the softmax's FMA-pipe work (softmax_fma_per_elem /
    fma_lanes_per_clk a score) takes `fma_over_exp` times its SFU exps (1 / sfu_exp_per_clk): above
    1 the FMA term decides the exp step, below 1 the exp term does. Every rate softmax_clk reads is
    slower than the datasheet's (fewer lanes and exps per clk, a longer reduction and tail), so the
    datasheet's numbers typed in give too few cycles whichever term decides."""
    sfu, lanes = rng.uniform(6, 14), rng.uniform(40, 120)
    return DATASHEET.with_(sfu_exp_per_clk=sfu, fma_lanes_per_clk=lanes,
                           softmax_fma_per_elem=fma_over_exp * lanes / sfu,
                           row_reduce_clk=rng.uniform(120, 240),
                           softmax_stall_per_elem=rng.uniform(0.03, 0.2))


# the unmasked softmax on drawn machines at drawn shapes, once in each regime: the FMA term 1.5-3
# times the exp term (a softmax without it is short by half the exps or more), then 0.25-0.75 times
UNMASKED = [(_softmax_hw(ratio), rng.choice([(64, 16 * rng.randint(1, 16)),
                                             (128, 16 * rng.randint(1, 9))]))
            for ratio in (rng.uniform(1.5, 3), rng.uniform(0.25, 0.75))]
UNMASKED_REF = [measure_softmax(hw, *shape) for hw, shape in UNMASKED]


def sub():
    return harness.submission(__file__, "rates.py")


@pytest.mark.points(1)
def test_wgmma_fp8_random():
    """fp8 shapes drawn at random (k not a multiple of 16): half the math, one-byte operands."""
    s = sub()
    for case, ref in zip(FP8, FP8_REF):
        got = forms.number(s.wgmma_group_clk(H200, *case), f"wgmma_group_clk{case}", 0)
        assert got == pytest.approx(ref, rel=1e-6), case


@pytest.mark.points(1)
def test_other_hardware():
    """The answer follows the Hardware it is given (every rate changed; fp16, bf16, fp8; A from
    registers where B's shared-memory read decides; A from shared memory at small n where A's read
    decides; the softmax masked, and unmasked where the FMA pipe decides and where the SFU does),
    not a preset's numbers."""
    s = sub()
    for case, ref in zip(OTHER, OTHER_REF):
        got = forms.number(s.wgmma_group_clk(SLOW_HW, *case), f"wgmma_group_clk{case}", 0)
        assert got == pytest.approx(ref, rel=1e-6), case
    for case, ref in zip(RS, RS_REF):             # A from registers, B's read deciding
        got = forms.number(s.wgmma_group_clk(RS_HW, *case), f"wgmma_group_clk{case}", 0)
        assert got == pytest.approx(ref, rel=1e-6), (case, "A from registers, slow smem")
    for case, ref in zip(SS, SS_REF):             # A from shared memory, A's read deciding
        got = forms.number(s.wgmma_group_clk(SS_HW, *case), f"wgmma_group_clk{case}", 0)
        assert got == pytest.approx(ref, rel=1e-6), (case, "A and B from shared memory, small n")
    got = forms.number(s.softmax_clk(SLOW_HW, *OTHER_SOFTMAX, masked=True), "softmax_clk", 0)
    assert got == pytest.approx(OTHER_SOFTMAX_REF, rel=1e-6)
    for (hw, (r, n)), ref in zip(UNMASKED, UNMASKED_REF):
        got = forms.number(s.softmax_clk(hw, r, n), f"softmax_clk({r}, {n})", 0)
        assert got == pytest.approx(ref, rel=1e-6), (r, n, "unmasked")
