"""sim/predict.py's rule for a causal launch's CTA lengths: simulated outright up to SETTLE blocks,
then the repeat the schedule settled into (`_period`). Held here against the lengths simulated
outright, on schedules of each kind of repeat: one block, two blocks (fa3 at d 64 and 256, the
sequential kernel at d 128), more than one masked block, and none at all (ws's two untied
consumers at d 64 drift in phase: every length is simulated)."""
from __future__ import annotations

import importlib

import pytest

from sim import attention
from sim.config import AttentionConfig
from sim.hardware import B200, H200

predict = importlib.import_module("sim.predict")   # the module (sim.predict is also a function)
LONGEST = 32      # twice SETTLE


def _series(variant: str, d: int, hw=H200, longest: int = LONGEST):
    cfg = attention.prepare(AttentionConfig(seqlen=8192, headdim=d, causal=True, variant=variant),
                            hw)
    masked = max(predict._lengths(cfg))[1]              # the longest CTA's

    def run(n):
        return attention.simulate(cfg, hw, n, min(masked, n))

    outright = {n: run(n)[0] for n in range(1, longest + 1)}
    cache: dict = {}
    ruled = {n: predict._cta_time(run, n, cache, settle=predict.SETTLE)
             for n in range(longest, 0, -1)}                # longest first, as a launch asks
    return outright, ruled, cache["period"]


@pytest.mark.parametrize("variant, d, period", [
    ("fa3", 64, 2), ("fa3", 256, 2), ("sequential", 128, 2), ("ws_pingpong", 128, 1),
    ("overlap3", 128, 1), ("fa2", 128, 1), ("ws", 64, None)])
def test_the_repeat_is_the_simulated_length(variant, d, period):
    outright, ruled, found = _series(variant, d)
    assert found == period
    worst = max(abs(ruled[n] / outright[n] - 1) for n in outright)
    assert worst < 1e-12, f"{variant} d {d}: the rule is {worst:.1e} off the simulated length"


def test_a_phase_flipped_late_is_what_the_rule_misses():
    """FA4 at d 64 on `b200` repeats every block for 28 blocks, then a tie between its two
    softmax warpgroups' exps on the SFU breaks the other way (the clocks of the same events, added
    up 28 times, differ in their last bits) and each block takes 52 clocks less: under the rule
    a CTA is 52 clocks long for each block past 29 (1.3 % at 64 blocks). No chapter runs that
    configuration (chapter 06's causal FA4 is d 128, which repeats exactly)."""
    outright, ruled, found = _series("fa4", 64, B200, longest=36)
    assert found == 1
    assert all(ruled[n] == pytest.approx(outright[n], rel=1e-12) for n in range(1, 30))
    assert (ruled[36] - outright[36]) / (36 - 29) == pytest.approx(52, rel=0.05)
