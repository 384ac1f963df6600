"""Hidden tests of chapter 04's tl kernel (never released): large scores."""
import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_attention_tl.py")
pub.EXTRA_CASES["large"] = lambda: pub.make(
    int(pub.RNG.integers(1, 3)), int(pub.RNG.integers(17, 49)), int(pub.RNG.integers(33, 97)),
    int(pub.RNG.choice([16, 32])), (16, 16), spread=6.0, scale=1.0)   # a shape drawn each run


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_interpreter_large_scores():
    """CPU (interpreter): scores of ±100 — exp must be taken against the running max."""
    pub.check("large", tol=3e-4)         # float32 against float64 at |s| ~ 100: ~3e-5 seen
