# exercise: ch04_online_softmax
# file: online_softmax.py
# loses: test_output_rescale, test_masked_rows
# bug: `update` ignores the (m, l, o) it is handed except to notice a fresh state (m = -inf, l = 0
#      everywhere), and continues from the state it returned last, kept in the module: right while
#      the calls come one sequence at a time, wrong as soon as two sequences interleave their
#      updates in one session (two warpgroups, two heads) or a state comes from anywhere else.
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

_STATE = None


def init(rows, d):
    """The state before any block: m = -inf, l = 0, o = 0."""
    return np.full(rows, -np.inf), np.zeros(rows), np.zeros((rows, d))


def update(m, l, o, s, v):
    """One block: return the new (m, l, o). Do not modify the arguments in place."""
    # the state lives here: a fresh (m = -inf, l = 0) state starts a sequence, every later call
    # continues from the state returned last
    global _STATE
    if np.isneginf(m).all() and not l.any():
        _STATE = (m.copy(), l.copy(), o.copy())
    if _STATE is not None:
        m, l, o = _STATE
    m_new = np.maximum(m, s.max(axis=1))
    safe = np.where(np.isneginf(m_new), 0.0, m_new)
    alpha = np.exp(m - safe)
    p = np.exp(s - safe[:, None])
    l_new = alpha * l + p.sum(axis=1)
    o_new = alpha[:, None] * o + p @ v
    _STATE = (m_new, l_new, o_new)
    return m_new.copy(), l_new.copy(), o_new.copy()


def finalize(m, l, o):
    """The attention output O = o / l and the log-sum-exp per row (m + log l). Rows with l = 0
    (every score masked) give O = 0 and lse = -inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1.0)[:, None], 0.0)
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return out, lse
