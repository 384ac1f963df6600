"""Hidden tests of chapter 01 (never released): every depth 2-4, many laps (up to 80), fewer
tiles than slots, the cycle count of a right ring, and long streams asked without a run (up to
70000 blocks; all drawn each run)."""
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


def _position(j, tile, n_blocks):
    """The stream position by arithmetic (`pub.stream`'s order, checked below for short runs)."""
    if tile == "K":
        return 2 * j - 1 if j > 0 else 0
    return 2 * j + 2 if j < n_blocks - 1 else 2 * n_blocks - 1


assert all(_position(j, t, n) == p for n in range(1, 13)
           for p, (j, t) in enumerate(pub.stream(n)))
# long streams, asked without a run: every depth over 129-400, 400-3000 and 3000-12000 blocks
# (more stream positions than a byte or a short table holds) and over 33000-70000 (positions
# past 65535: arithmetic in 16 bits, signed or not, wraps there, and at 3 stages the slot and the
# parities do not survive the wrap), the first and last blocks and others drawn, both tiles,
# every question
LONG = [(stages, n) for stages in (2, 3, 4)
        for n in (rng.randint(129, 400), rng.randint(400, 3000), rng.randint(3000, 12000),
                  rng.randint(33000, 70000))]
LONG_BLOCKS = {c: sorted({0, 1, c[1] - 2, c[1] - 1} | {rng.randrange(c[1]) for _ in range(8)})
               for c in LONG}


def _long_streams(m):
    """The answers for LONG, each against the arithmetic of its stream position p: slot
    p % stages, full parity (p // stages) & 1, empty parity its opposite."""
    for stages, n_blocks in LONG:
        for j in LONG_BLOCKS[stages, n_blocks]:
            for t in "KV":
                p = _position(j, t, n_blocks)
                want = {"slot": p % stages, "full_parity": (p // stages) & 1,
                        "empty_parity": ((p // stages) & 1) ^ 1}
                for fn, w in want.items():
                    got = pub._ask(m, fn, j, t, stages, n_blocks)
                    assert got == w, (f"{fn}({j}, {t!r}, {stages}, {n_blocks}) = {got}, want {w} "
                                      f"({t}_{j} is stream position {p} of {2 * n_blocks})")


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
    (±0.5%). Then, without a run, long streams (129 to 70000 blocks, every depth): the slot and
    the parities of the first and last tiles and of others drawn, against their stream
    position's arithmetic."""
    m = pub.sub()
    for (stages, n_blocks), ref in REF.items():
        r, slots, bad = pub.run_ring(m, stages, n_blocks, hw=HW, headdim=64, block_n=128)
        try:
            pub.assert_runs(r, slots, bad, n_blocks, stages)
            assert r.clk == pytest.approx(ref, rel=5e-3)
        except AssertionError as e:
            raise AssertionError(f"{stages} stages, {n_blocks} blocks: {e}") from None
    _long_streams(m)
