"""The fitted constants, cross-validated (fidelity/crossval.py): each kernel family held
out of the fits that `fidelity.calibrate` runs, the fits rerun without it, and the family
predicted. The model should predict what it was not fitted to: median held-out |error| ≤ 5 %
over all rows, and every family's held-out max ≤ 10 %.

Since the power cap's plane is held to the clock streams' ceiling (results/h200-clock.json;
results/lab-notebook.md, 2026-12-05, "The clock streams in the power-cap plane") the median holds;
three families still miss, each a strict miss below with what the cross-validation found. A
change that brings one in must move it to `HOLDS`.
"""
import functools
import statistics

import pytest

from fidelity import crossval as xv
from fidelity.calibrate import SOFTMAX_GRID, fit_h200_softmax
from sim.hardware import H200

SEQUENTIAL_AT_THE_LOW_END = (
    "with the GEMM traces out, the plane held to the streams' ceiling puts every traced GEMM's "
    "clock within -5 ... +9 %, but the sequential GEMM (no traced clock; tensor busy ~30 %, the "
    "plane's low-activity end, which only the streams' bounds reach) comes out +12.6 % (in-sample "
    "+8.1 %), and the bandwidth-bound 128x128 pingpong (bf16) -10.5 %")
WS_PINS_BESIDE = (
    "softmax_beside_mma = 2.0 is chosen by ws's cycles alone: the other five kernels prefer 1.8, "
    "where the model's ws schedule is 10 % slower per block (3656 against 3308 clk; at 2.2, "
    "3381: not monotone), so with ws out the grid moves to 1.8 and ws misses")
SEQUENTIAL_CYCLES = (
    "attention sequential is +10.1 % in-sample: its cycles per block are 8.5 % short of Nsight "
    "Compute's (4528 against 4950 clk, tests/fidelity/test_compare.py), and the plane held to "
    "the streams' ceiling gives its low-activity clock 1.9 % more than before (1729 MHz)")
HOLDS = ["attention pipelined", "attention ws_pingpong", "attention overlap", "attention fa3",
         "head dim 128"]
MISSES = {"GEMM ladder": SEQUENTIAL_AT_THE_LOW_END, "attention ws": WS_PINS_BESIDE,
          "attention sequential": SEQUENTIAL_CYCLES}


@functools.cache
def result() -> xv.CrossVal:
    """The cross-validation, once for the module (about a minute of the model on two cores)."""
    return xv.crossval()


def family(name: str) -> xv.Family:
    return next(f for f in result().families if f.name == name)


def test_the_families_are_read_off_the_rows():
    """The GEMM ladder, each attention variant, each head dim; an attention row in two."""
    cv = result()
    assert sorted(f.name for f in cv.families) == sorted(HOLDS + list(MISSES))
    for r in cv.rows:
        member = [f.name for f in cv.families if r in f.rows]
        assert member == (["GEMM ladder"] if r.workload == "gemm"
                          else [f"attention {r.variant}", f"head dim {r.config.headdim}"])


def test_in_sample_is_the_preset_within_ten_per_cent():
    """What crossval starts from: every headline row within ±10 % on the preset but attention
    sequential (test_compare.py's known miss), which is not."""
    cv = result()
    out = [(r.workload, r.variant) for r, e in zip(cv.rows, cv.in_sample) if abs(e) > 0.10]
    assert out == [("attention", "sequential")], out


def test_a_fit_with_nothing_held_out_is_the_preset():
    """With no family out, no fit is rerun, and the softmax grid over all six cycle rows picks
    the preset's values (the power cap's: tests/fidelity/test_power_cap.py)."""
    constants, targets = xv.refit(None)
    assert constants == {}
    assert targets.clocks[0] == targets.clocks[1] and targets.cycles[0] == targets.cycles[1]
    best = fit_h200_softmax(echo=False)
    assert best == {c: getattr(H200, c) for c in SOFTMAX_GRID}


def test_holding_a_family_out_drops_exactly_its_targets():
    from fidelity.calibrate import alignment_pairs, clock_points
    points = clock_points()
    _, gemm = xv.refit("GEMM ladder")
    assert gemm.clocks == (sum(p.workload != "gemm" for p in points), len(points))
    assert gemm.align == (0, len(alignment_pairs())) and gemm.cycles[0] == gemm.cycles[1]
    _, fa3 = xv.refit("attention fa3")
    assert fa3.clocks[0] == len(points) - sum(p.variant == "fa3" for p in points)
    assert fa3.cycles == (fa3.cycles[1] - 1, fa3.cycles[1])


def _held_out_within_ten_per_cent(name: str) -> None:
    f = family(name)
    worst = max(f.held_out, key=abs)
    assert abs(worst) <= 0.10, f"{name}: held out {worst:+.1%} (in-sample {f.in_sample_stats[1]:.1%})"


@pytest.mark.parametrize("name", HOLDS)
def test_a_family_held_out_is_predicted_within_ten_per_cent(name):
    _held_out_within_ten_per_cent(name)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=why))
                                  for n, why in MISSES.items()])
def test_a_family_that_only_fits_in_sample(name):
    _held_out_within_ten_per_cent(name)


def test_median_held_out_error_within_five_per_cent():
    assert statistics.median(abs(e) for e in result().held_out) <= 0.05


def test_the_readme_table_is_what_the_code_prints():
    """fidelity/README.md's table is `python -m fidelity crossval`'s output now (rewrite it with
    `python -m fidelity crossval --readme`)."""
    assert xv.readme_table(xv.README.read_text()) == xv.readme_block(result())
