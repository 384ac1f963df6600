"""The model against our kernels' committed H200 measurements (sim/fidelity.py).

The ±10% target of issue 5 is met for the warp-specialized attention schedules, not yet for the
in-line ones or the GEMMs (`python -m sim fidelity` prints where it misses). What is held here: for
every pair of variants at the headline shapes the model says which one the H200 measured faster,
and the attention schedules that are within ±10% stay there."""
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
PAIRS = [(w, a, b) for w, best in LADDERS.items() for a, b in combinations(sorted(best), 2)]
# (Until 2026-12-02's microbenchmarks the pair attention overlap/ws was a strict xfail here: the
# model put overlap above ws. With the measured FMA rate, TMA and wgmma latencies it orders all.)
# Within ±10% of the H200 at FA3 tab. 2's shape (each row at its run's logged clock): the
# warp-specialized and overlapped schedules. Not yet: the in-line `sequential` and `pipelined`
# (the model is 26-31 % low) and the GEMMs (sim/README.md, "fidelity").
WITHIN_10 = ("ws", "ws_pingpong", "overlap", "fa3")


def test_enough_measurements_are_predicted():
    assert sum(r.model is not None for r in ROWS) >= 10
    assert {"sequential", "ws", "ws_pingpong", "fa3"} <= set(LADDERS["attention"])
    assert {"sequential", "ws", "ws_pingpong"} <= set(LADDERS["gemm"])


@pytest.mark.parametrize("workload, a, b", PAIRS)
def test_model_orders_the_pair_as_measured(workload, a, b):
    (ma, pa), (mb, pb) = LADDERS[workload][a], LADDERS[workload][b]
    assert (ma < mb) == (pa < pb), f"measured {a} {ma:.0f} vs {b} {mb:.0f}; model {pa:.0f} vs {pb:.0f}"


@pytest.mark.parametrize("variant", WITHIN_10)
def test_attention_schedules_within_ten_percent(variant):
    rows = [r for r in ROWS if r.workload == "attention" and r.variant == variant
            and r.shape == f"B{B} H{H} S{S} d{D}" and r.model is not None]
    assert rows, f"no measured {variant} row at the headline shape"
    for r in rows:
        assert abs(r.error) <= 0.10, f"{r.label}: measured {r.measured:.0f}, model {r.model:.0f}"
