"""Hidden tests of chapter 01 (never released): every depth 2-4, many laps (up to 80), fewer
tiles than slots, and the cycle count of a right ring (drawn each run)."""
import random

import pytest

from exercises.grading import harness
from sim import H100

pub = harness.public(__file__, "test_ring.py")
rng = random.SystemRandom()              # drawn afresh each grading run: no table can hold them


class _Reference:
    @staticmethod
    def slot(j, tile, stages, n_blocks):
        return _Reference._at(j, tile, n_blocks) % stages

    @staticmethod
    def full_parity(j, tile, stages, n_blocks):
        return (_Reference._at(j, tile, n_blocks) // stages) & 1

    @staticmethod
    def empty_parity(j, tile, stages, n_blocks):
        return _Reference.full_parity(j, tile, stages, n_blocks) ^ 1

    @staticmethod
    def _at(j, tile, n_blocks):
        return list(pub.stream(n_blocks)).index((j, tile))


HW = H100.with_(mbarrier_clk=rng.uniform(20, 60), tma_latency_clk=rng.uniform(600, 1400))
CASES = [(2, rng.randint(2, 5)), (2, 1), (3, rng.randint(9, 16)), (4, rng.randint(1, 2)),
         (4, rng.randint(17, 24)),                # 4 stages over 8.5-12 laps, every run
         # long runs: 64-80 laps of two slots, 27-37 of three (a parity table of the first laps,
         # however many, runs out)
         (2, rng.randint(64, 80)), (3, rng.randint(40, 56))]


def _clk(m, stages, n_blocks):
    r, slots, bad = pub.run_ring(m, stages, n_blocks, hw=HW, headdim=64, block_n=128)
    pub.assert_runs(r, slots, bad, n_blocks, stages)
    return r.clk


REF = {c: _clk(_Reference, *c) for c in CASES}


@pytest.mark.points(2)
def test_every_depth_and_many_laps():
    """Rings of 2, 3, 4 stages over 1 to 80 blocks (up to 80 laps; 4 stages over 8.5-12), on a
    Hardware with other barrier and copy latencies: every rule, each tile copied into the slot of
    its stream position (p % stages, from the log), and the cycle count of a right ring
    (±0.5%)."""
    m = pub.sub()
    for (stages, n_blocks), ref in REF.items():
        r, slots, bad = pub.run_ring(m, stages, n_blocks, hw=HW, headdim=64, block_n=128)
        try:
            pub.assert_runs(r, slots, bad, n_blocks, stages)
            assert r.clk == pytest.approx(ref, rel=5e-3)
        except AssertionError as e:
            raise AssertionError(f"{stages} stages, {n_blocks} blocks: {e}") from None
