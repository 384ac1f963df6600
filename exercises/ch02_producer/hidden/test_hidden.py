"""Hidden tests of chapter 02's producer (never released): rings of 1 to 4 stages, fewer blocks
than stages, many laps (up to 56), fp8 and bf16 element sizes, and the cycle count of a right
producer (drawn each run)."""
import random

import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_producer.py")
rng = random.SystemRandom()                      # drawn afresh each grading run


def _reference_producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.empty[s], ((j // ring.stages) & 1) ^ 1)
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))


# (stages, blocks, dtype): a 1-stage ring, fewer blocks than stages (a prologue that fills every
# slot copies blocks that do not exist), one to four stages, one- and two-byte elements.
CASES = [(3, rng.randint(9, 15), "fp16"), (1, rng.randint(2, 5), rng.choice(["bf16", "fp8"])),
         (4, rng.randint(1, 3), "fp8"), (2, rng.randint(5, 9), "bf16"),
         # long runs: 40-56 laps of one slot, 32-40 laps of two (a parity table of the first laps,
         # however many, runs out)
         (1, rng.randint(40, 56), "fp16"), (2, rng.randint(64, 80), rng.choice(["fp16", "fp8"]))]
TILE = {"block_n": 128, "headdim": 64}
REF = {}
for _c in CASES:
    _ref = pub.run(stages=_c[0], n_blocks=_c[1], dtype=_c[2], producer=_reference_producer, **TILE)
    assert _ref.finished and not any(_ref.violations.values()), (_ref.error, _ref.violations)
    REF[_c] = _ref.clk


@pytest.mark.points(2)
def test_three_stages():
    """Every rule with rings of 1-4 stages over 1-80 blocks (fewer blocks than stages included,
    up to 56 laps), fp16, bf16 and fp8; the cycle count of a right producer (±0.5%)."""
    for (stages, blocks, dtype), ref in REF.items():
        r = pub.run(stages=stages, n_blocks=blocks, dtype=dtype, **TILE)
        try:
            assert r.finished, r.error
            assert not any(r.violations.values()), {k: v[:2] for k, v in r.violations.items() if v}
            assert r.copied["k"] == list(range(blocks)) == r.copied["v"]
            assert r.clk == pytest.approx(ref, rel=5e-3)
        except AssertionError as e:
            raise AssertionError(f"{stages} stages, {blocks} blocks, {dtype}: {e}") from None
