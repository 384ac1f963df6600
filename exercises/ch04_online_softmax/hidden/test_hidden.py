"""Hidden tests of chapter 04's online softmax (never released): masked rows, at a head dim other
than the public tests' 16 (drawn each run)."""
import numpy as np
import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_online_softmax.py")


@pytest.mark.points(1)
def test_masked_rows():
    """Rows masked (-inf) over their first 33-79 keys, a row whose trailing block is masked, a row
    whose middle block is masked, and one row masked everywhere: no NaN, right answer; the head
    dim d is not 16 (1-128, drawn): `init` and the state follow the d they are given."""
    s_mod = pub.sub()
    d = int(pub.RNG.choice([x for x in range(1, 129) if x != 16]))
    s, v, _ = pub.blocks(rows=6, n=96, d=d)
    cut = int(pub.RNG.integers(33, 80))
    s[:3, :cut] = -np.inf          # rows 0-2: the first keys masked (past the first block)
    s[3, 64:] = -np.inf            # row 3: its last block masked, after unmasked ones
    s[4, 32:64] = -np.inf          # row 4: a masked block between two unmasked ones
    s[5, :] = -np.inf              # row 5: everything masked
    parts = [(s[:, i:i + 32], v[i:i + 32]) for i in range(0, 96, 32)]
    out, lse = pub.output(s_mod.finalize(*pub.run(s_mod, parts, 6, d)), 6, d)
    ref, ref_lse = pub.reference(s[:5], v)
    np.testing.assert_allclose(out[:5], ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lse[:5], ref_lse, rtol=1e-12)
    assert (out[5] == 0).all() and np.isneginf(lse[5])
