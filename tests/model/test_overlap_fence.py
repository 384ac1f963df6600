"""The schedule fence's A/B (`results/h200-ab-fence*.json`), in the model: the overlapped
kernels as compiled with `common.schedule_fence` (the softmax between the two waits, the pack of
P after it) and without (ptxas puts the wait for P·V before the softmax and the pack among its
exps: `overlap.consumer(..., fence=False)`). On the H200 the two builds time the same: fa3 578.1
vs 577.4 TFLOP/s, overlap 478.2 vs 477.1; one warpgroup per SM, overlap 430.5 vs 419.4."""
import pytest
import simpy

from sim.attention import overlap, prepare, ws
from sim.attention.cta import AttentionCTA
from sim.config import AttentionConfig
from sim.cta import make_units
from sim.hardware import H200
from sim.trace import Trace

BLOCKS = 24


def cycles(variant: str, fence: bool, block_m: int = 128, hw=H200) -> float:
    """One CTA over BLOCKS K/V blocks of the headline shape, the kernel's 128-wide blocks."""
    cfg = prepare(AttentionConfig(variant=variant, batch=4, heads=16, seqlen=8448, headdim=128,
                                  block_m=block_m, block_n=128, consumers=block_m // 64,
                                  stages=2), hw)
    env, trace = simpy.Environment(), Trace()
    cta = AttentionCTA(env, hw, cfg, trace, BLOCKS, units=make_units(env, hw, trace))
    turns = variant == "fa3"
    roles = [ws.producer(cta)] if turns else []
    roles += [overlap.consumer(cta, w, producer=turns, turns=turns, fence=fence)
              for w in range(cfg.consumers)]
    env.run(until=simpy.AllOf(env, [env.process(r) for r in roles]))
    return env.now


def test_without_the_fence_the_softmax_waits_for_pv():
    """The no-fence schedule is slower at one warpgroup, whose P·V has nothing else to hide it."""
    assert cycles("overlap", fence=False, block_m=64) > cycles("overlap", fence=True, block_m=64)


@pytest.mark.parametrize("block_m", [128, 64])
def test_overlap_times_the_same_with_and_without(block_m):
    """Measured: within 0.2 % (two warpgroups) and 2.6 % (one); the model: 0.3 % and 4.5 %."""
    assert cycles("overlap", False, block_m) == pytest.approx(cycles("overlap", True, block_m),
                                                              rel=0.05)


@pytest.mark.xfail(strict=True, reason="known miss: the model's fa3 is 12 % slower in cycles without the fence")
def test_fa3_times_the_same_with_and_without():
    assert cycles("fa3", False) == pytest.approx(cycles("fa3", True), rel=0.03)
