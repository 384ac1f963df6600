"""Grader for chapter 03: the turn barriers, alone and inside the `ws_pingpong` schedule."""
import itertools

import pytest

from exercises.grading import harness
from sim import H100, AttentionConfig, simulate

BLOCKS = 8
REF_CLK = harness.reference_clk("ws_pingpong", BLOCKS)
WS_OVERLAPS = len(harness.overlaps(harness.run_cta(variant="ws", n_blocks=BLOCKS).trace, "QKᵀ"))
assert WS_OVERLAPS > 0            # the problem pingpong solves is there without it
TURN_HW = H100.with_(mbarrier_clk=1.0, mbarrier_probe_clk=0.0)


def sub():
    return harness.submission(__file__, "pingpong.py")


def _turn_order(s, n, rounds):
    """n consumer warpgroups that only take turns: wait, 10 clk of work, pass on."""
    log = []

    def wg(cta, w):
        for k in range(rounds):
            yield from s.wait_turn(cta, w, k)
            log.append((cta.now, w, k))
            yield cta.delay(10)
            s.pass_turn(cta, w)

    cfg = AttentionConfig(variant="ws_pingpong", headdim=64, block_m=64 * n, block_n=64,
                          consumers=n)
    run = simulate(cfg, TURN_HW, roles={"producer": None, "consumer": wg}, n_blocks=1,
                   limit_clk=1e5, record=False)
    return log, run


@pytest.mark.points(2)
def test_turns_alternate():
    """Alone: 2 warpgroups × 4 turns go 0, 1, 0, 1, ... one at a time, starting at once."""
    log, run = _turn_order(sub(), 2, 4)
    assert run.finished, run.error
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
