"""Hidden tests of chapter 01 (never released): more stages, more laps, later phases."""
import random

import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_ring.py")
rng = random.SystemRandom()              # drawn afresh each grading run: no table can hold them
BLOCKS = rng.randint(9, 14)
GEMM_STAGES = rng.randint(5, 6)               # 6 × 24 KiB + C's 64 KiB fit 227 KiB
REF_CLK_3 = harness.reference_clk("ws", BLOCKS, 3, block_n=128)   # 3 × 64 KiB + Q fits 227 KiB
PASSES_LATE = {(n, p): pub.model_passes(n, p) for n in rng.sample(range(6, 40), 4) for p in (0, 1)}
WAITS_5 = pub.gemm_waits(GEMM_STAGES)


@pytest.mark.points(2)
def test_more_stages_and_laps():
    """The same with 5-6 GEMM stages, a 3-stage attention ring over 9-14 blocks, later phases."""
    m = pub.sub()
    assert all(bool(m.passes(n, p)) == want for (n, p), want in PASSES_LATE.items())
    for which, fn in (("empty", m.empty_parity), ("full", m.full_parity)):
        got = [(m.slot(j, GEMM_STAGES), fn(j, GEMM_STAGES)) for j in range(len(WAITS_5[which]))]
        assert got == WAITS_5[which], which
    r = pub.run_ring(m, stages=3, n_blocks=BLOCKS, block_n=128)
    assert r.finished, r.error
    assert not r.violations["read_before_land"] and not r.violations["overwrite"], r.violations
    assert r.clk == pytest.approx(REF_CLK_3, rel=5e-3)
