"""Hidden tests of chapter 04's online softmax (never released): masked rows, at a head dim other
than the public tests' 16 (drawn each run), beside a single row at d = 1, and an update from a
state built here at a drawn shape."""
import numpy as np
import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_online_softmax.py")


@pytest.mark.points(1)
def test_masked_rows():
    """Rows masked (-inf) over their first 33-79 keys, a row whose trailing block is masked, a row
    whose middle block is masked, and one row masked everywhere: no NaN, right answer, and after
    every block a row masked so far in the state the statement gives it (m = -inf, l = 0, o = 0);
    the head dim d is not 16 (1-128, drawn): `init` and the state follow the d they are given.
    Beside it in the same session, its updates interleaved: a single row at d = 1 over blocks of
    one key. Then one update from a state built here at a drawn shape (1 row or more, d 1 or more,
    a block of 1 key or more)."""
    s_mod = pub.sub()
    d = int(pub.RNG.choice([x for x in range(1, 129) if x != 16]))
    s, v, _ = pub.blocks(rows=6, n=96, d=d)
    cut = int(pub.RNG.integers(33, 80))
    s[:3, :cut] = -np.inf          # rows 0-2: the first keys masked (past the first block)
    s[3, 64:] = -np.inf            # row 3: its last block masked, after unmasked ones
    s[4, 32:64] = -np.inf          # row 4: a masked block between two unmasked ones
    s[5, :] = -np.inf              # row 5: everything masked
    # beside it in the same session, its updates interleaved with these: a single query row at
    # d = 1 over blocks of one key (8-40 of them)
    s1, v1, parts1 = pub.blocks(rows=1, n=int(pub.RNG.integers(8, 41)), d=1, block=1)
    one = pub.state(s_mod.init(1, 1), 1, 1, "init")
    per = -(-len(parts1) // 3)
    m, l, o = pub.state(s_mod.init(6, d), 6, d, "init")
    for i in range(0, 96, 32):
        for s_j, v_j in parts1[i // 32 * per:(i // 32 + 1) * per]:
            one = pub.state(s_mod.update(*one, s_j.copy(), v_j.copy()), 1, 1)
        m, l, o = pub.state(s_mod.update(m, l, o, s[:, i:i + 32].copy(), v[i:i + 32].copy()), 6, d)
        dark = np.isneginf(s[:, :i + 32]).all(axis=1)       # rows whose every key so far is masked
        # by construction: rows 0-2 after the first block (and the second when cut >= 64), row 5
        assert dark[5] and dark[:3].all() == (i == 0 or (i == 32 and cut >= 64))
        assert np.isneginf(m[dark]).all(), (
            f"keys 0-{i + 31}: a row masked so far must keep m = -inf, got {m[dark]}")
        assert (l[dark] == 0).all() and (o[dark] == 0).all(), (
            f"keys 0-{i + 31}: a row masked so far must keep l = 0 and o = 0")
    out, lse = pub.output(s_mod.finalize(m, l, o), 6, d)
    ref, ref_lse = pub.reference(s[:5], v)
    np.testing.assert_allclose(out[:5], ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lse[:5], ref_lse, rtol=1e-12)
    assert (out[5] == 0).all() and np.isneginf(lse[5])
    ref1, _ = pub.reference(s1, v1)
    np.testing.assert_allclose(one[2] / one[1][:, None], ref1, rtol=1e-9, atol=1e-12, err_msg=(
        f"a single row at d = 1 over {len(parts1)} blocks of one key, beside the masked rows"))
    # one update from a state built here, at a drawn shape: 1 row or 2-32, d 1 or 2-128, a block
    # of 1 key or 2-48
    rows, dd, width = (int(pub.RNG.choice([1, pub.RNG.integers(2, 33)])),
                       int(pub.RNG.choice([1, pub.RNG.integers(2, 129)])),
                       int(pub.RNG.choice([1, pub.RNG.integers(2, 49)])))
    s, v, _ = pub.blocks(rows=rows, n=5 * width, d=dd, block=width)
    seen = width * int(pub.RNG.integers(1, 5))
    got = pub.state(s_mod.update(*pub.state_after(s, v, seen), s[:, seen:seen + width].copy(),
                                 v[seen:seen + width].copy()), rows, dd)
    for name, a, b in zip("mlo", got, pub.state_after(s, v, seen + width)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10, err_msg=(
            f"update({name}) at {rows} rows, d = {dd}, from the state after keys 0-{seen - 1} "
            f"built here, with keys {seen}-{seen + width - 1}"))
