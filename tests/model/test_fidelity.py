"""The model against our kernels' committed H200 measurements (sim/fidelity.py).

The ±10% target of issue 5 is not met yet (`python -m sim fidelity` prints where it misses). What
is held here: for every pair of variants at the headline shapes, the model must say which one the
H200 measured faster — except the pairs listed as known misses, which must stay misses until the
model is fixed (strict xfail)."""
from itertools import combinations

import pytest

from sim.fidelity import HEADLINE_ATTENTION, best_by_variant, compare
from sim.hardware import H200

ROWS = compare(H200)
B, H, S, D = HEADLINE_ATTENTION
LADDERS = {
    "attention": best_by_variant(ROWS, "attention", f"B{B} H{H} S{S} d{D}"),
    "gemm": best_by_variant(ROWS, "gemm", "8192×8192×8192 float16"),
}
KNOWN_MISSES = {
    # At our kernels' 128×128 tiles the model puts `overlap` (518) above `ws` (497); the H200
    # measured the opposite (478 vs 529): without a producer the in-line loads cost more than the
    # model's CTA barrier charges.
    ("attention", "overlap", "ws"),
}
PAIRS = [(w, a, b) for w, best in LADDERS.items() for a, b in combinations(sorted(best), 2)]


def test_enough_measurements_are_predicted():
    assert sum(r.model is not None for r in ROWS) >= 10
    assert {"sequential", "ws", "ws_pingpong", "fa3"} <= set(LADDERS["attention"])
    assert {"sequential", "ws", "ws_pingpong"} <= set(LADDERS["gemm"])


@pytest.mark.parametrize("workload, a, b", [p for p in PAIRS if p not in KNOWN_MISSES])
def test_model_orders_the_pair_as_measured(workload, a, b):
    (ma, pa), (mb, pb) = LADDERS[workload][a], LADDERS[workload][b]
    assert (ma < mb) == (pa < pb), f"measured {a} {ma:.0f} vs {b} {mb:.0f}; model {pa:.0f} vs {pb:.0f}"


@pytest.mark.parametrize("workload, a, b", sorted(KNOWN_MISSES))
@pytest.mark.xfail(strict=True, reason="known miss (see KNOWN_MISSES); strict: a fix must be noticed")
def test_known_misses(workload, a, b):
    (ma, pa), (mb, pb) = LADDERS[workload][a], LADDERS[workload][b]
    assert (ma < mb) == (pa < pb)
