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


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_interpreter_large_scores():
    """CPU (interpreter): scores of ±100, and at d = 128 q·kᵀ of ±400 scaled by d^-0.5 — exp
    must be taken against the running max of the scaled scores."""
    pub.check("large", tol=3e-4)         # float32 against float64 at |s| ~ 100: ~3e-5 seen
    pub.check("large_d128", tol=3e-4)
