"""The model against our kernels' committed H200 measurements (fidelity/compare.py).

Held here, on the `h200` preset (each kernel at the clock the power cap gives it): for every pair
of variants at the headline shapes the H200 orders (their timing rounds do not overlap) the model
says which one was faster, and a pair the H200 does not order it keeps within 5 %; every
measured kernel at the headline shapes is within ±10%, except the ones named in KNOWN_MISSES
(held to miss: a change that brings one in must say so); over all of them the median error stays
small; and the attention kernels' cycles per block, the clock taken out, are within ±10% of
what Nsight Compute counted (`results/h200-stall.json`).

The tests are parametrized by the measured rows alone (`compare(None, ...)`: read from the files,
nothing predicted), so collecting them costs no model run; the predictions are made once, by
the first test that needs them (`predicted()`), on whichever pytest-xdist worker runs them."""
import functools
import statistics
from itertools import combinations

import pytest

from fidelity.compare import HEADLINE_ATTENTION, best_by_variant, compare, cycle_rows, resolved
from sim.hardware import H200

B, H, S, D = HEADLINE_ATTENTION
SHAPES = {"attention": f"B{B} H{H} S{S} d{D}", "gemm": "8192×8192×8192 float16"}


def headline(rows):
    return [r for r in rows if (r.workload == "gemm" and r.shape.startswith("8192×8192×8192 "))
            or (r.workload == "attention" and r.shape == SHAPES["attention"] and not r.override)]


# every committed measurement once (`python -m fidelity --all`), read but not predicted
MEASURED = compare(None, everything=True)


@functools.cache
def predicted() -> list:
    """Every committed measurement, predicted on `h200`."""
    return compare(H200, everything=True)


def rows() -> list:
    """The headline shapes' rows, predicted."""
    return headline(predicted())


@functools.cache
def ladders() -> dict:
    return {w: best_by_variant(rows(), w, SHAPES[w]) for w in SHAPES}


def variants(workload: str) -> list[str]:
    return sorted({r.variant for r in headline(MEASURED) if r.workload == workload
                   and r.shape == SHAPES[workload] and not r.override})


PAIRS = [(w, a, b) for w in SHAPES for a, b in combinations(variants(w), 2)]
# What the model does not place within 10 % at the headline shapes, by (workload, kernel, shape),
# held to miss (strict): none (fidelity/README.md, "How close").
KNOWN_MISSES: set[tuple[str, str, str]] = set()
KEYS = sorted({(r.workload, r.label, r.shape) for r in headline(MEASURED)})


def test_enough_measurements_are_predicted():
    # the GEMM ladder (fp16, bf16, results/h200.json) and the attention's (h200-attention.json)
    assert len(rows()) == 36
    assert all(r.model is not None for r in rows()), [r.note for r in rows() if r.model is None]
    assert {"sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3"} <= set(
        ladders()["attention"])
    assert {"sequential", "pipelined", "ws", "ws_pingpong"} <= set(ladders()["gemm"])
    assert {(w, a, b) for w, best in ladders().items()
            for a, b in combinations(sorted(best), 2)} == set(PAIRS)    # what was parametrized


TIE = 0.05      # how far apart the model may put two kernels the machine does not order


@pytest.mark.parametrize("workload, a, b", PAIRS)
def test_model_orders_the_pair_as_measured(workload, a, b):
    """Where the machine orders a pair (their rounds do not overlap), the model orders it the
    same; where it does not (a tie inside run-to-run spread), the model keeps them within 5 %."""
    (ma, pa), (mb, pb) = ladders()[workload][a], ladders()[workload][b]
    if resolved(rows(), workload, a, b, SHAPES[workload]):
        assert (ma < mb) == (pa < pb), (
            f"measured {a} {ma:.0f} vs {b} {mb:.0f}; model {pa:.0f} vs {pb:.0f}")
    else:
        assert abs(pa / pb - 1) <= TIE, (
            f"{a} and {b} tie on the machine ({ma:.0f}, {mb:.0f}); model {pa:.0f} vs {pb:.0f}")


def test_most_pairs_are_ordered_by_the_machine():
    """The ordering test has teeth only if the machine resolves most pairs."""
    ordered = sum(resolved(rows(), w, a, b, SHAPES[w]) for w, a, b in PAIRS)
    assert ordered >= 0.75 * len(PAIRS), f"{ordered} of {len(PAIRS)} pairs ordered"


def _within_ten_percent(key, among=None):
    found = [r for r in among or rows() if (r.workload, r.label, r.shape) == key]
    assert found, f"no measured row {key}"
    assert all(r.model is not None for r in found), [r.note for r in found]
    for r in found:
        assert abs(r.error) <= 0.10, f"{r.label} {r.shape}: measured {r.measured:.0f}, model {r.model:.0f}"


@pytest.mark.parametrize("key", [k for k in KEYS if k not in KNOWN_MISSES], ids=" ".join)
def test_kernel_within_ten_percent(key):
    _within_ten_percent(key)


def test_known_misses_still_miss():
    """Strict: a known miss that comes within 10% must leave KNOWN_MISSES."""
    for key in KNOWN_MISSES:
        with pytest.raises(AssertionError):
            _within_ten_percent(key)


def test_cycles_of_the_plain_kernels():
    """Cycles per K/V block, the clock taken out: Nsight Compute on the six plain attention
    kernels (`results/h200-stall.json`) against the model's time × its clock, each within ±10%."""
    cycles = cycle_rows(H200)
    assert {r.variant for r in cycles} == {"sequential", "pipelined", "ws", "ws_pingpong",
                                           "overlap", "fa3"}
    for r in cycles:
        assert r.model is not None and abs(r.error) <= 0.10, (
            f"{r.label}: measured {r.measured:.0f} clk/block, model {r.model:.0f}")


def test_cycles_can_fail():
    """The same comparison with a softmax that ignores the tensor core beside it misses."""
    rows = cycle_rows(H200.with_(softmax_beside_mma=1.0))
    assert max(abs(r.error) for r in rows) > 0.10


def test_median_error_is_small():
    errors = [abs(r.error) for r in rows() if r.error is not None]
    assert statistics.median(errors) <= 0.06, f"median |error| {statistics.median(errors):.1%}"


def test_the_model_runs_each_kernel_at_its_own_clock():
    """Under the power cap a GEMM that keeps the tensor cores busy runs slower than one that
    waits on every load; nothing runs above the boost clock."""
    clocks = {r.label: r.clock_hz for r in rows()
              if r.workload == "gemm" and r.shape.endswith("float16")}
    assert clocks["sequential s1 np"] > 1.05 * clocks["ws s3"]
    assert all(0.8e9 < c <= H200.clock_hz for c in clocks.values())


def test_everything_includes_the_one_warpgroup_kernels(monkeypatch):
    """`--all` predicts the shipped kernels of the one-warpgroup fence A/B
    (`h200-ab-fence-64x128.json`) at their own 64×128 tile, marked as an override; the A/B's
    unshipped "no fence" side is left out."""
    from fidelity import compare as fidelity

    ab = fidelity._ab_rows()
    assert {r["variant"] for r in ab} == {"overlap", "pipelined"}
    monkeypatch.setattr(fidelity, "_load", lambda name, key: [])  # only the A/B's rows
    rows = fidelity.attention_rows(H200, everything=True)
    assert len(rows) == len(ab) == 4
    assert all(r.label.endswith("64×128") and r.override and r.model for r in rows)


# --- every committed measurement (`python -m fidelity --all`) -------------------------------
# What the model does not place within 10 % yet, by (workload, kernel, shape); each is held to
# miss (strict), so a change that brings one in must take it off this list. fidelity/README.md,
# "Where it misses", says why each misses.
SWEEP_MISSES = {
    # 1024³: one cold tile a CTA, 32-48 CTAs on 132 SMs. The model's clock is the machine's (1.95-1.98
    # GHz in the model, 2.0 in do_bench's loop: the launch leaves most SMs idle), but a cold
    # launch costs more cycles than the turnover and the launch's 1.6 µs (h200-gemm-sweep.json:
    # the model's cycles 15-21 % short)
    ("gemm", "sequential s1 np dev", "1024×1024×1024 float16"),
    ("gemm", "ws s3 dev", "1024×1024×1024 float16"),
    ("gemm", "ws_pingpong s4 dev", "1024×1024×1024 float16"),
    # one warpgroup's k-step waits on its own copies: misaligned, short-K and cold rows cost it
    # more than the model's pipelined-fitted copies; and its clock is 5-10 % high in the model
    ("gemm", "sequential s1 np dev", "2048×2048×2048 float16"),
    ("gemm", "sequential s1 np dev", "8000×8008×4104 float16"),
    ("gemm", "sequential s1 np dev", "3000×5000×1336 float16"),
    ("gemm", "sequential s1 np dev", "8192×8192×1024 float16"),
    # d 64: the model's blocks 10-12 % short in cycles (h200-stall-sweep.json). Causal launches
    # leave SMs idle in their tail, so the model raises their clock, and at S 1K, where half the
    # CTAs are short, the short blocks show
    ("attention", "fa3 s2", "B16 H32 S1024 d64 causal"),
}
ALL_KEYS = sorted({(r.workload, r.label, r.shape) for r in MEASURED})


@pytest.mark.parametrize("key", [k for k in ALL_KEYS if k not in SWEEP_MISSES], ids=" ".join)
def test_every_measured_kernel_within_ten_percent(key):
    """The GEMM sizes (their device time, h200-gemm-sweep.json), the attention sweep, the
    one-warpgroup A/B."""
    _within_ten_percent(key, predicted())


def test_sweep_misses_still_miss():
    """Strict: a sweep miss that comes within 10 % must leave SWEEP_MISSES."""
    assert SWEEP_MISSES <= set(ALL_KEYS)
    for key in SWEEP_MISSES:
        with pytest.raises(AssertionError):
            _within_ten_percent(key, predicted())


def test_most_of_everything_is_within_ten_percent():
    assert len(ALL_KEYS) >= 80 and len(SWEEP_MISSES) <= 0.15 * len(ALL_KEYS)


def test_alignment_pairs_within_the_fit():
    """`tma_misaligned_factor` as fitted (`python -m fidelity calibrate --align`): each of the
    nine pairs (`h200-align.json`), the same kernel and shape with rows off and on 128-byte lines, slows in the
    model within 13 % of the machine's ratio; with the factor at 1 the model sees nothing."""
    from fidelity.calibrate import alignment_pairs
    from sim.config import GemmConfig
    from sim.predict import predict

    pairs = alignment_pairs()
    assert len(pairs) == 9
    for hw, tol in ((H200, 0.13), (H200.with_(tma_misaligned_factor=1.0), None)):
        for (M, N, K), v, measured in pairs:
            off, on = (predict(GemmConfig(m=M, n=N, k=K, variant=v, aligned=a), hw).seconds
                       for a in (False, True))
            if tol:
                assert off / on == pytest.approx(measured, rel=tol), (M, v)
            else:
                assert off == on
