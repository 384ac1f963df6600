"""The model against our kernels' committed H200 measurements (sim/fidelity.py).

The ±10% target of issue 5 is not met yet (`python -m sim fidelity` prints where it misses); what
the model must already get right is the *order* of the variants on the real machine."""
import pytest

from sim.fidelity import HEADLINE_ATTENTION, best_by_variant, compare
from sim.hardware import H200

ROWS = compare(H200)
pytestmark = pytest.mark.skipif(not ROWS, reason="no committed H200 measurements of our kernels")


def _ranks(best: dict[str, tuple[float, float]], which: int) -> list[str]:
    return sorted(best, key=lambda v: best[v][which])


def test_enough_measurements_are_predicted():
    assert sum(r.model is not None for r in ROWS) >= 10


def test_attention_ladder_in_measured_order():
    b, h, s, d = HEADLINE_ATTENTION
    best = best_by_variant(ROWS, "attention", f"B{b} H{h} S{s} d{d}")
    assert {"sequential", "ws", "ws_pingpong", "fa3"} <= set(best)
    assert _ranks(best, 1) == _ranks(best, 0), {v: (round(m), round(p)) for v, (m, p) in best.items()}


def test_gemm_ladder_in_measured_order():
    best = best_by_variant(ROWS, "gemm", "8192×8192×8192 float16")
    assert {"sequential", "ws", "ws_pingpong"} <= set(best)
    assert _ranks(best, 1) == _ranks(best, 0), {v: (round(m), round(p)) for v, (m, p) in best.items()}
