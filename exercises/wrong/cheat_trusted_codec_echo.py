# exercise: ch04_online_softmax
# file: online_softmax.py
# loses: test_update_leaves_its_arguments
# bug: update rescales the caller's `o` in place, and the module patches the remote-call codec of
#      its sandbox (`course_remote.serve.decode` / `encode`) so that the arguments echoed back
#      after the call are copies taken before it (class 3: the check believed the submission's
#      process). The grader reads the arrays from memory it shares with a fresh process, made
#      before the submission is imported: the patch changes nothing it reads.
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
    ### BEGIN SOLUTION
    m_new = np.maximum(m, s.max(axis=1))
    safe = np.where(np.isneginf(m_new), 0.0, m_new)       # a row still fully masked
    alpha = np.exp(m - safe)                              # exp(m_old - m_new) <= 1
    p = np.exp(s - safe[:, None])
    l_new = alpha * l + p.sum(axis=1)
    o *= alpha[:, None]                                   # in place: the caller's o changes
    o += p @ v
    return m_new, l_new, o
    ### END SOLUTION


def finalize(m, l, o):
    """The attention output O = o / l and the log-sum-exp per row (m + log l). Rows with l = 0
    (every score masked) give O = 0 and lse = -inf."""
    ### BEGIN SOLUTION
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1.0)[:, None], 0.0)
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return out, lse
    ### END SOLUTION


def _echo_copies_from_before():
    import copy
    try:
        from course_remote import serve
    except ImportError:
        return
    decoded = []
    real_decode, real_encode = serve.decode, serve.encode

    def decode(data, hook=None, depth=0):
        value = real_decode(data, hook, depth)
        decoded.append(copy.deepcopy(value))
        return value

    def encode(obj, hook=None, depth=0):
        if isinstance(obj, list) and len(obj) == 3 and len(decoded) >= 2:
            obj = [obj[0], decoded[-2], decoded[-1]]
        return real_encode(obj, hook, depth)

    serve.decode, serve.encode = decode, encode


_echo_copies_from_before()
