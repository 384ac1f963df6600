# exercise: ch04_online_softmax
# file: online_softmax.py
# loses: test_output_rescale, test_update_leaves_its_arguments, test_masked_rows
# bug: squeezes the new running max: right for every block of 2 rows or more, a 0-d max for a
#      single query row (decoding), whose `[:, None]` then raises.
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
    m_new = np.maximum(m, s.max(axis=1)).squeeze()     # a 0-d max when rows == 1
    safe = np.where(np.isneginf(m_new), 0.0, m_new)       # a row still fully masked
    alpha = np.exp(m - safe)                              # exp(m_old - m_new) <= 1
    p = np.exp(s - safe[:, None])
    l_new = alpha * l + p.sum(axis=1)
    o_new = alpha[:, None] * o + p @ v
    return m_new, l_new, o_new


def finalize(m, l, o):
    """The attention output O = o / l and the log-sum-exp per row (m + log l). Rows with l = 0
    (every score masked) give O = 0 and lse = -inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1.0)[:, None], 0.0)
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return out, lse
