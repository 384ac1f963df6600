"""The fitted constants, cross-validated (fidelity/crossval.py): each kernel family held
out of the fits that `fidelity.calibrate` runs, the fits rerun without it, and the family
predicted. The model should predict what it was not fitted to: median held-out |error| ≤ 5 %
over all rows, and every family's held-out max ≤ 10 %.

Today it does not, for three families; each is a strict miss below with what the
cross-validation found (results/lab-notebook.md, 2026-12-04, "Cross-validation"). A change that
brings one in must move it to `HOLDS`.
"""
import functools
import statistics

import pytest

from fidelity import crossval as xv
from fidelity.calibrate import SOFTMAX_GRID, fit_h200_softmax
from sim.hardware import H200

L2_ONLY_IN_SAMPLE = (
    "the power cap's L2 coefficient is fitted by the GEMM clocks alone: in every other clock we "
    "measured, L2 bytes and exps per clock are fixed multiples of the tensor busy fraction "
    "(attention's K/V bytes and scores per FLOP are set by its tile and head dim: 32 B/clk and "
    "8 exps/clk, 4 at d 256, per unit of tensor), so without the GEMM traces only the one d 256 "
    "trace splits L2 from exps — L2 +89 %, exp −120 % — and the GEMMs' clock comes out low. The "
    "clock streams (results/h200-clock.json) ran at the ceiling: bounds, not points; held to them "
    "(`crossval --bounded`, test_with_the_streams_bounds_the_median_is_within_five_per_cent) the "
    "ladder's held-out median is 5.4 %, but the preset would then lose attention sequential")
WS_PINS_BESIDE = (
    "softmax_beside_mma = 2.0 is chosen by ws's cycles alone: the other five kernels prefer 1.8, "
    "where the model's ws schedule is 10 % slower per block (3656 against 3308 clk; at 2.2, "
    "3381: not monotone), so with ws out the grid moves to 1.8 and ws misses. Mechanism: ws's "
    "two consumers are tied by nothing but the tensor core, and the model settles their phase "
    "by the constant: at 2.0 their Q·Kᵀ start ~640 clk apart as the traced kernel's do (628), at "
    "1.8 they collide (test_lanes.py::test_ws_phase_is_the_machines_at_the_preset_and_collides_"
    "held_out)")
D128_IS_ALL = (
    "d 128 holds every attention row and all six cycle rows: with it out the softmax falls back "
    "to h100's tab. 2 fit (1.5, 0.02) and the power cap's exps term rests on the one d 256 "
    "trace (+103 %): pipelined −11.5 %")
HOLDS = ["attention sequential", "attention pipelined", "attention ws_pingpong",
         "attention overlap", "attention fa3"]
MISSES = {"GEMM ladder": L2_ONLY_IN_SAMPLE, "attention ws": WS_PINS_BESIDE,
          "head dim 128": D128_IS_ALL}


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
    """What crossval starts from: every headline row within ±10 % on the preset."""
    assert max(abs(e) for e in result().in_sample) <= 0.10


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


@pytest.mark.xfail(strict=True, reason=L2_ONLY_IN_SAMPLE + " (26 of the 36 rows)")
def test_median_held_out_error_within_five_per_cent():
    assert statistics.median(abs(e) for e in result().held_out) <= 0.05


@functools.cache
def bounded() -> xv.CrossVal:
    """The cross-validation with the power cap held to the clock streams' ceiling, in-sample
    and in every refit (`python -m fidelity crossval --bounded`)."""
    return xv.crossval(bounded=True)


def test_with_the_streams_bounds_the_median_is_within_five_per_cent():
    """Held to the L2 and exp2 streams' ceiling the plane's L2 term is no longer free with the
    GEMMs out: the held-out median over all rows comes within 5 % (4.8 % against 11.9 %), the
    GEMM ladder's under half of what it is on the preset (5.4 % against 12.9 %). What keeps
    the preset from taking that plane: in-sample, attention sequential then misses (+10.1 %),
    and fa2, persistent d 64 and the sequential GEMMs move the same way (fidelity/README.md)."""
    cv = bounded()
    assert statistics.median(abs(e) for e in cv.held_out) <= 0.05
    gemm = next(f for f in cv.families if f.name == "GEMM ladder")
    assert gemm.held_out_stats[0] < family("GEMM ladder").held_out_stats[0] / 2
    out = [(r.workload, r.variant) for r, e in zip(cv.rows, cv.in_sample) if abs(e) > 0.10]
    assert out == [("attention", "sequential")], out


def test_the_readme_table_is_what_the_code_prints():
    """fidelity/README.md's table is `python -m fidelity crossval`'s output now (rewrite it with
    `python -m fidelity crossval --readme`)."""
    assert xv.readme_table(xv.README.read_text()) == xv.readme_block(result())
