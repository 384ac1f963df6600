"""Grader for chapter 04 (math): the online update against a float64 softmax of the whole row,
on fresh random data every run."""
import numpy as np
import pytest

from exercises.grading import forms, harness

RNG = np.random.default_rng()          # fresh data each grading run: no answer to memorise


def reference(s, v):
    """Plain softmax(s) @ v and logsumexp in float64, the whole row at once."""
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    return (p / p.sum(axis=1, keepdims=True)) @ v, (m[:, 0] + np.log(p.sum(axis=1)))


def blocks(rows=32, n=160, d=16, block=32, spread=6.0):
    s = RNG.normal(0, spread, (rows, n))
    s += np.linspace(0, 3 * spread, n)[None, :] * RNG.choice([-1, 1], (rows, 1))   # max moves
    v = RNG.normal(size=(n, d))
    return s, v, [(s[:, i:i + block], v[i:i + block]) for i in range(0, n, block)]


def state(value, rows, d, what="update", o_compared=True):
    """(m, l, o) as returned, its form checked: arrays of shapes (rows,), (rows,), (rows, d); m
    finite or -inf (a row masked so far), l finite, and o finite where a test compares it."""
    m, l, o = forms.sequence(value, f"{what}'s (m, l, o)", 3)
    return (forms.array(m, f"{what}: m", (rows,), allow_neginf=True),
            forms.array(l, f"{what}: l", (rows,)),
            forms.array(o, f"{what}: o", (rows, d), finite=o_compared))


def output(value, rows, d):
    """(out, lse) from finalize, its form checked (lse may be -inf for a fully masked row)."""
    out, lse = forms.sequence(value, "finalize's (out, lse)", 2)
    return (forms.array(out, "finalize: out", (rows, d)),
            forms.array(lse, "finalize: lse", (rows,), allow_neginf=True))


def run(sub, parts, rows, d):
    m, l, o = state(sub.init(rows, d), rows, d, "init")
    for s_j, v_j in parts:
        m, l, o = state(sub.update(m, l, o, s_j.copy(), v_j.copy()), rows, d)
    return m, l, o


def sub():
    return harness.submission(__file__, "online_softmax.py")


@pytest.mark.points(2)
def test_running_max_and_sum():
    """After every block, m is the row max so far and l = Σ exp(s - m) so far."""
    s_mod = sub()
    s, _, parts = blocks()
    m, l, o = state(s_mod.init(32, 16), 32, 16, "init")
    seen = 0
    for s_j, v_j in parts:                                  # this test reads m and l, not o
        m, l, o = state(s_mod.update(m, l, o, s_j.copy(), v_j.copy()), 32, 16, o_compared=False)
        seen += s_j.shape[1]
        ref_m = s[:, :seen].max(axis=1)
        np.testing.assert_allclose(m, ref_m, rtol=1e-12)
        np.testing.assert_allclose(l, np.exp(s[:, :seen] - ref_m[:, None]).sum(axis=1), rtol=1e-10)


@pytest.mark.points(2)
def test_output_rescale():
    """o / l after all blocks equals softmax(s) @ v (relative error 1e-9): the rescale of o."""
    s_mod = sub()
    for block in (16, 32, 48):
        s, v, parts = blocks(block=block)
        _, l, o = run(s_mod, parts, 32, 16)
        ref, _ = reference(s, v)
        np.testing.assert_allclose(o / l[:, None], ref, rtol=1e-9, atol=1e-12)


@pytest.mark.points(1)
def test_finalize():
    """finalize gives O and the log-sum-exp (from a state built here, not by your update)."""
    s_mod = sub()
    s, v, _ = blocks(rows=8, n=96)
    m = s.max(axis=1)
    p = np.exp(s - m[:, None])
    out, lse = output(s_mod.finalize(m, p.sum(axis=1), p @ v), 8, 16)
    ref, ref_lse = reference(s, v)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-12)


@pytest.mark.points(1)
def test_update_leaves_its_arguments():
    """`update` returns new arrays and leaves the state and the block it was given as they were."""
    s_mod = sub()
    s, v, parts = blocks(rows=8, n=64)
    m, l, o = state(s_mod.init(8, 16), 8, 16, "init")
    for s_j, v_j in parts:
        args = (m, l, o, s_j.copy(), v_j.copy())
        new, after, _ = s_mod.echo("update", *args)
        new = state(new, 8, 16, o_compared=False)      # compared: the arguments, not o
        for name, a, b in zip(("m", "l", "o", "s", "v"), args, after):
            np.testing.assert_array_equal(b, a, err_msg=f"update changed its argument {name}")
        m, l, o = new
