"""Grader for chapter 05: measuring idle time, and predicting it before the model runs."""
import random

import pytest

from exercises.grading import forms, harness
from sim import H200_DATASHEET as DATASHEET


def measured(hw, block_n, headdim, n=40):
    """The model's steady-state tensor idle fraction for `ws` with one consumer warpgroup."""
    r = harness.run_cta(variant="ws", n_blocks=n, hw=hw, consumers=1, block_m=64,
                        block_n=block_n, headdim=headdim)
    assert r.finished, r.error
    starts = sorted(a for a, _ in harness.gemm_groups(r.trace, "QKᵀ").values())
    t0, t1 = starts[5], starts[n - 5]
    busy = [(i.start, i.end) for i in r.trace.intervals if i.unit == "tensor"]
    return busy, t0, t1


def true_idle(busy, t0, t1):
    return 1 - sum(max(0.0, min(e, t1) - max(s, t0)) for s, e in busy) / (t1 - t0)


TAB2 = measured(DATASHEET, 176, 128)
TAB2_IDLE = true_idle(*TAB2)
rng = random.SystemRandom()


def idle(s, *args):
    return forms.number(s.idle_fraction(*args), "idle_fraction", 0, 1)


def predicted(s, *args):
    return forms.number(s.predict_ws_idle(*args), "predict_ws_idle", 0, 1)


def sub():
    return harness.submission(__file__, "idle.py")


@pytest.mark.points(1)
def test_idle_fraction_synthetic():
    """Overlapping intervals count once; parts outside the window do not count."""
    s = sub()
    assert idle(s, [(0, 10), (5, 15), (30, 40)], 0, 40) == pytest.approx(15 / 40)
    assert idle(s, [(-5, 5), (35, 50)], 0, 40) == pytest.approx(30 / 40)
    assert idle(s, [], 0, 40) == pytest.approx(1.0)
    pts = sorted(rng.uniform(0, 100) for _ in range(40))
    ivs = [(a, a + rng.uniform(0, 8)) for a in pts]
    rng.shuffle(ivs)
    union, cur = 0.0, 0.0
    for a, b in sorted(ivs):
        a, b = max(a, cur), min(b, 100)
        if b > a:
            union, cur = union + b - a, b
    assert idle(s, ivs, 0, 100) == pytest.approx(1 - union / 100)


@pytest.mark.points(1)
def test_idle_fraction_of_the_model():
    """On the model's own trace it agrees with the model."""
    assert idle(sub(), *TAB2) == pytest.approx(TAB2_IDLE, abs=1e-9)


@pytest.mark.points(2)
def test_predict_tab2_tile():
    """Prediction for the tab. 2 tile (block_n 176, head dim 128) within 0.001 of the model."""
    assert predicted(sub(), DATASHEET, 176, 128) == pytest.approx(TAB2_IDLE, abs=1e-3)
