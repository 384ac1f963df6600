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
rng = random.Random()          # drawn afresh each grading run (the runner reseeds it per student
                               # and test, so a regrade of the same file draws the same values)


def exposed(s, *args):
    return forms.number(s.exposed_softmax(*args), "exposed_softmax", 0, 1)


def predicted(s, *args):
    return forms.number(s.predict_ws_idle(*args), "predict_ws_idle", 0, 1)


def sub():
    return harness.submission(__file__, "idle.py")


def on_the_grid(tensor, sfu, t0, t1):
    """The exposed share of a window with whole-number ends, one clock at a time."""
    def busy(ivs, k):
        return any(s <= k < e for s, e in ivs)
    return sum(busy(sfu, k) and not busy(tensor, k) for k in range(t0, t1)) / (t1 - t0)


@pytest.mark.points(1)
def test_exposed_softmax_synthetic():
    """Only SFU time with no tensor work counts; overlaps within a unit count once; parts outside
    the window do not count, and an interval reaching past both ends of the window counts for
    the whole window."""
    s = sub()
    assert exposed(s, [(0, 10)], [(5, 15), (30, 40)], 0, 40) == pytest.approx(15 / 40)
    assert exposed(s, [(0, 10), (2, 4)], [(1, 12), (8, 14), (-5, 2)], 0, 20) == \
        pytest.approx(4 / 20)
    assert exposed(s, [], [], 0, 40) == 0.0
    assert exposed(s, [(0, 40)], [(0, 40)], 0, 40) == 0.0
    # one interval holds the window: it starts before t0 and ends after t1
    assert exposed(s, [], [(-10, 50)], 0, 40) == pytest.approx(1.0)
    assert exposed(s, [(10, 20)], [(-1, 41)], 0, 40) == pytest.approx(30 / 40)
    assert exposed(s, [(-10, 50)], [(5, 15), (-3, 45)], 0, 40) == 0.0
    for i in range(20):
        t0, t1 = rng.randint(-20, 20), rng.randint(60, 120)
        ivs = [[(a, a + rng.randint(1, 12))
                for a in rng.sample(range(-30, 130), rng.randint(0, 16))] for _ in range(2)]
        if i % 2:                    # and intervals longer than the window, reaching past its ends
            ivs[i % 4 // 2].append((t0 - rng.randint(1, 30), t1 + rng.randint(1, 30)))
            ivs[rng.randint(0, 1)].append((rng.randint(-60, 0), rng.randint(60, 180)))
        assert exposed(s, *ivs, t0, t1) == pytest.approx(on_the_grid(*ivs, t0, t1)), (ivs, t0, t1)


@pytest.mark.points(2)
def test_predict_tab2_tile():
    """Prediction for the tab. 2 tile (block_n 176, head dim 128) within 0.001 of the model."""
    assert predicted(sub(), DATASHEET, 176, 128) == pytest.approx(TAB2_IDLE, abs=1e-3)
