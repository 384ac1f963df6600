# exercise: ch04_online_softmax
# file: online_softmax.py
# loses: test_output_rescale
# bug: no max subtracted before exp: the state is turned back into raw sums (l * e^m, o * e^m),
#      the block's raw exp(s) added, and the result divided by e^m_new. Algebraically the same
#      state, exact to 1e-13 at scores of a few tens; but exp overflows past 709 in float64, so at
#      scores of about ±1000 l and o are inf or NaN.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 04 — the online softmax, one K/V block at a time (numpy, float64).

A consumer keeps, per query row, the running max ``m``, the running sum ``l`` of exp(s - m) and
the *unnormalized* output ``o`` = Σ exp(s - m)·v over the blocks seen so far. When block j brings
scores ``s`` (rows × n, already scaled) and values ``v`` (n × d), the max may grow, and everything
accumulated against the old max must be rescaled to the new one. FA3's alg. 1 prints that factor
for the output upside down: use the factor that agrees with the running sum. Get it right, and
keep rows whose scores so far are all -inf (masked) at m = -inf, l = 0, o = 0 without NaNs.
"""
import numpy as np


def init(rows, d):
    """The state before any block: m = -inf, l = 0, o = 0."""
    return np.full(rows, -np.inf), np.zeros(rows), np.zeros((rows, d))


def update(m, l, o, s, v):
    """One block: return the new (m, l, o). Do not modify the arguments in place."""
    m_new = np.maximum(m, s.max(axis=1))
    masked = np.isneginf(m_new)                           # a row still fully masked
    with np.errstate(invalid="ignore", over="ignore"):
        e_old = np.exp(m)                                 # the sums against 0, not against m
        raw_l = l * e_old + np.exp(s).sum(axis=1)
        raw_o = o * e_old[:, None] + np.exp(s) @ v
        inv = np.where(masked, 0.0, np.exp(-m_new))       # back to the new max at the end
        l_new = np.where(masked, 0.0, raw_l * inv)
        o_new = np.where(masked[:, None], 0.0, raw_o * inv[:, None])
    return m_new, l_new, o_new


def finalize(m, l, o):
    """The attention output O = o / l and the log-sum-exp per row (m + log l). Rows with l = 0
    (every score masked) give O = 0 and lse = -inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1.0)[:, None], 0.0)
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return out, lse
