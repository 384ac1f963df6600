"""Hidden tests of chapter 02's producer (never released): a deeper ring, more blocks, and the
cycle count of a right producer."""
import random

import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_producer.py")


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


BLOCKS = random.SystemRandom().randint(9, 15)     # drawn afresh each grading run
_ref = pub.run(stages=3, n_blocks=BLOCKS, block_n=128, producer=_reference_producer)
assert _ref.finished and not any(_ref.violations.values()), (_ref.error, _ref.violations)
REF_CLK_3 = _ref.clk


@pytest.mark.points(2)
def test_three_stages():
    """Every rule with a 3-stage ring and 9-15 blocks; the cycle count of a right producer (±0.5%)."""
    r = pub.run(stages=3, n_blocks=BLOCKS, block_n=128)
    assert r.finished, r.error
    assert not any(r.violations.values()), {k: v[:2] for k, v in r.violations.items() if v}
    assert r.copied["k"] == list(range(BLOCKS)) == r.copied["v"]
    assert r.clk == pytest.approx(REF_CLK_3, rel=5e-3)
