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


HUGE = 250.0    # blocks(spread=HUGE): scores of about ±1000; float64's exp overflows past 709


def masked_blocks(rows=6, n=96, d=16, block=32):
    """blocks() with rows masked (-inf) at every edge: leading keys (past the first block), a
    trailing block after unmasked ones, a middle block, a whole row."""
    s, v, _ = blocks(rows=rows, n=n, d=d)
    s[:rows - 3, :int(RNG.integers(block + 1, n - block))] = -np.inf
    s[rows - 3, n - block:] = -np.inf
    s[rows - 2, block:2 * block] = -np.inf
    s[rows - 1, :] = -np.inf
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


def run_together(sub, runs):
    """Several sequences of blocks at once in one session, their updates interleaved (block 0 of
    each, then block 1 of each, ...), each update handed the state its own sequence's last update
    returned. `runs`: [(s, v, parts)]; returns their final states (m, l, o)."""
    states = [state(sub.init(s.shape[0], v.shape[1]), s.shape[0], v.shape[1], "init")
              for s, v, _ in runs]
    for i in range(max(len(parts) for *_, parts in runs)):
        for k, (s, v, parts) in enumerate(runs):
            if i < len(parts):
                s_j, v_j = parts[i]
                states[k] = state(sub.update(*states[k], s_j.copy(), v_j.copy()), s.shape[0],
                                  v.shape[1])
    return states


def one_row():
    """A single query row over blocks of one key each."""
    return blocks(rows=1, n=24, block=1)


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
    """o / l after all blocks equals softmax(s) @ v (relative error 1e-9): the rescale of o; last
    with scores of about ±1000, where exp without the max subtracted overflows. Each run goes
    beside another in the same session, their updates interleaved (each handed its own state): a
    single query row over blocks of one key. Then one update from a state built here (not one your
    update returned) must give the state after that block."""
    s_mod = sub()
    for block, spread in ((16, 6.0), (32, 6.0), (48, 6.0), (32, HUGE)):
        runs = [blocks(block=block, spread=spread), one_row()]
        for (s, v, _), (_, l, o), what in zip(runs, run_together(s_mod, runs), (
                f"blocks of {block}", "one row, blocks of one key, beside it")):
            ref, _ = reference(s, v)
            np.testing.assert_allclose(o / l[:, None], ref, rtol=1e-9, atol=1e-12, err_msg=(
                f"{what}, scores up to {np.abs(s).max():.0f}, two runs interleaved"))
    s, v, _ = blocks()
    seen = 32 * int(RNG.integers(1, 5))
    given = state_after(s, v, seen)
    got = state(s_mod.update(*given, s[:, seen:seen + 32].copy(), v[seen:seen + 32].copy()), 32,
                16)
    for name, a, b in zip("mlo", got, state_after(s, v, seen + 32)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10, err_msg=(
            f"update({name}) from the state after keys 0-{seen - 1}, built here, with keys "
            f"{seen}-{seen + 31}"))


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


def graded_runs():
    """(what, s, v, block) of every kind of block the graded tests give `update`: the moving
    max at each block width, scores of ±1000, a single row over blocks of one key, rows masked
    at every edge at a head dim drawn in 1-128."""
    runs = [(f"blocks of {b}", *blocks(block=b)[:2], b) for b in (16, 32, 48)]
    runs.append(("scores of ±1000", *blocks(spread=HUGE)[:2], 32))
    runs.append(("one row, blocks of one key", *one_row()[:2], 1))
    d = int(RNG.integers(1, 129))
    runs.append((f"rows masked, d = {d}", *masked_blocks(d=d)[:2], 32))
    return runs


def state_after(s, v, seen):
    """The right state (m, l, o) after the first `seen` keys, computed here."""
    rows, d = s.shape[0], v.shape[1]
    if seen == 0:
        return np.full(rows, -np.inf), np.zeros(rows), np.zeros((rows, d))
    m = s[:, :seen].max(axis=1)
    p = np.exp(s[:, :seen] - np.where(np.isneginf(m), 0.0, m)[:, None])
    return m, p.sum(axis=1), p @ v[:seen]


def own_or_right(value, s, v, seen):
    """The state a graded run would pass on, the submission's own (as `run` does), where it has
    the form; the right state where it has not (a wrong `update` does not change what this test
    asks it)."""
    try:
        return state(value, s.shape[0], v.shape[1], o_compared=False)
    except AssertionError:
        return state_after(s, v, seen)


def same_arguments(given, after, where):
    assert isinstance(after, list) and len(after) == len(given), "update's echo is malformed"
    for name, a, b in zip(("m", "l", "o", "s", "v"), given, after):
        np.testing.assert_array_equal(b, a, err_msg=f"update changed its argument {name} ({where})")


@pytest.mark.points(1)
def test_update_leaves_its_arguments():
    """`update` returns new arrays and leaves the state and the block it was given as they were:
    in the session the other tests use, after `init`, on every kind of block they give it, each
    argument sent back as the call left it; and in a process of its own whose arrays the grader
    reads from memory it shares with that process."""
    s_mod = sub()
    for what, s, v, block in graded_runs():          # as a graded run goes, the arguments echoed
        try:
            m, l, o = own_or_right(s_mod.init(s.shape[0], v.shape[1]), s, v, 0)
        except AssertionError:                       # init failed: the other tests judge it
            m, l, o = state_after(s, v, 0)
        for i in range(0, s.shape[1], block):
            args = (m, l, o, s[:, i:i + block].copy(), v[i:i + block].copy())
            new, after, _ = s_mod.echo_in_session("update", *args)
            same_arguments(args, after, f"{what}, in the session")
            m, l, o = own_or_right(new, s, v, i + block)
    s, v, _ = blocks(rows=8, n=64)
    for i in range(0, 64, 32):                       # in a process of its own
        args = (*state_after(s, v, i), s[:, i:i + 32].copy(), v[i:i + 32].copy())
        _, after, _ = s_mod.echo("update", *args)
        same_arguments(list(args), list(after), "in a process of its own")
