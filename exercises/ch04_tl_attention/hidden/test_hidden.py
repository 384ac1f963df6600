"""Hidden tests of chapter 04's tl kernel (never released): large scores."""
import numpy as np
import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_attention_tl.py")
pub.EXTRA_CASES["large"] = lambda: pub.make(
    int(pub.RNG.integers(1, 3)), int(pub.RNG.integers(17, 49)), int(pub.RNG.integers(33, 97)),
    int(pub.RNG.choice([16, 32])), (16, 16), spread=6.0, scale=1.0)   # a shape drawn each run


def _large_d128():
    """d = 128 at its own scale (d^-0.5 = 0.088) with |q·kᵀ| of 100-400: the scaled scores stay
    near 35, but a max kept of the unscaled q·kᵀ is some 200 above them, and exp of that shift
    is 0 in float32 (l = 0, O = NaN). Sk is never a multiple of the block: masked keys too."""
    B, Sq = int(pub.RNG.integers(1, 3)), int(pub.RNG.integers(17, 49))
    Sk = 16 * int(pub.RNG.integers(2, 6)) + int(pub.RNG.integers(1, 16))
    c = pub.make(B, Sq, Sk, 128, (16, 16), spread=3.0)
    c["v"] = pub.RNG.normal(0, 1, c["v"].shape).astype(np.float32)
    return c


pub.EXTRA_CASES["large_d128"] = _large_d128


def _long():
    """A long sequence drawn each run: Sk of 193-383 (never a multiple of the block) over Sq of
    two to six row blocks, scores of a few tens: every key block must count, not only the first."""
    bm, bn = [(16, 64), (32, 64)][int(pub.RNG.integers(0, 2))]
    Sq = bm * int(pub.RNG.integers(2, 96 // bm + 1)) - int(pub.RNG.integers(0, bm))
    Sk = bn * int(pub.RNG.integers(200 // bn + 1, 400 // bn + 1)) - int(pub.RNG.integers(1, bn))
    return pub.make(1, Sq, Sk, int(pub.RNG.choice([16, 32, 64])), (bm, bn), spread=2.0)


pub.EXTRA_CASES["long_drawn"] = _long


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_interpreter_large_scores():
    """CPU (interpreter): scores of ±100, and at d = 128 q·kᵀ of ±400 scaled by d^-0.5 — exp
    must be taken against the running max of the scaled scores; and a long sequence (Sk of
    193-383 over several row blocks)."""
    pub.check("large", tol=3e-4)         # float32 against float64 at |s| ~ 100: ~3e-5 seen
    pub.check("large_d128", tol=3e-4)
    pub.check("long_drawn", tol=1e-4)
