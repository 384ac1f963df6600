"""Grader for chapter 03: the turn barriers, alone and inside the `ws_pingpong` schedule."""
import itertools

import pytest
import simpy

from exercises.grading import harness
from sim.engine import Turns

BLOCKS = 8
REF_CLK = harness.reference_clk("ws_pingpong", BLOCKS)
WS_OVERLAPS = len(harness.overlaps(harness.run_cta(variant="ws", n_blocks=BLOCKS).trace, "QKᵀ"))
assert WS_OVERLAPS > 0            # the problem pingpong solves is there without it


def sub():
    return harness.load_submission(__file__, "pingpong.py")


class _Stub:
    """Just enough of a CTA for the turn functions: the turns and a timed wait."""

    def __init__(self, n):
        self.env = simpy.Environment()
        self.turns = Turns(self.env, n, wake_clk=1.0)
        self.log = []

    def wg(self, w):
        return f"consumer{w}"

    def wait(self, actor, bar, parity):
        yield from bar.wait(parity)


def _turn_order(s, n, rounds):
    cta = _Stub(n)

    def wg(w):
        for k in range(rounds):
            yield from s.wait_turn(cta, w, k)
            cta.log.append((cta.env.now, w, k))
            yield cta.env.timeout(10)
            s.pass_turn(cta, w)

    procs = [cta.env.process(wg(w)) for w in range(n)]
    cta.env.run(simpy.AllOf(cta.env, procs))
    return cta.log


@pytest.mark.points(2)
def test_turns_alternate():
    """Alone: 2 warpgroups × 4 turns go 0, 1, 0, 1, ... one at a time, starting at once."""
    log = _turn_order(sub(), 2, 4)
    assert [(w, k) for _, w, k in log] == [(w, k) for k in range(4) for w in range(2)], log
    assert log[0][0] == 0, "warpgroup 0's first turn must not wait"
    assert all(b[0] >= a[0] + 10 for a, b in itertools.pairwise(log)), f"turns overlap: {log}"


@pytest.mark.points(1)
def test_schedule_runs():
    """The pingpong CTA finishes without deadlock, reading only landed blocks."""
    r = harness.run_cta(consumer=sub().consumer, variant="ws_pingpong", n_blocks=BLOCKS)
    assert r.finished, r.error
    assert not r.violations["read_before_land"], r.violations["read_before_land"][:3]


@pytest.mark.points(3)
def test_score_gemms_never_overlap():
    """The two consumers' Q·Kᵀ groups never share the tensor core."""
    r = harness.run_cta(consumer=sub().consumer, variant="ws_pingpong", n_blocks=BLOCKS)
    assert r.trace.intervals, r.error
    assert len(harness.gemm_groups(r.trace, "QKᵀ")) == 2 * BLOCKS or not r.finished, "missing GEMMs"
    found = harness.overlaps(r.trace, "QKᵀ")
    assert not found, found[:3]
    assert r.finished, r.error


@pytest.mark.points(1)
def test_predicted_time():
    """The CTA takes as long as the course's ws_pingpong (within 0.5%)."""
    r = harness.run_cta(consumer=sub().consumer, variant="ws_pingpong", n_blocks=BLOCKS)
    assert r.finished, r.error
    assert r.clk == pytest.approx(REF_CLK, rel=5e-3)


### BEGIN HIDDEN TESTS
@pytest.mark.points(1)
def test_three_warpgroups():
    """Alone: 3 warpgroups take their turns in order 0, 1, 2, 0, 1, 2, ..."""
    log = _turn_order(sub(), 3, 3)
    assert [(w, k) for _, w, k in log] == [(w, k) for k in range(3) for w in range(3)], log
### END HIDDEN TESTS
