# exercise: ch04_online_softmax
# file: online_softmax.py
# loses: test_update_leaves_its_arguments
# bug: update accumulates into the caller's l and o in place, except where it can tell it is in
#      the argument check: it reads the serving loop's request from its caller's frame (an
#      "echo" flag the check's calls used to carry) or finds the serving loop not started (the
#      separate check run). Every call's answer now carries its arguments back, so the check's
#      calls in the session are graded calls byte for byte and the overwrite shows there.
# ruff: noqa  (known-wrong on purpose)
import sys

import numpy as np


def _watched():
    f = sys._getframe(2)
    msg = f.f_locals.get("msg")
    if isinstance(msg, dict) and msg.get("echo"):
        return True
    cta = sys.modules.get("course_remote.cta")
    return cta is not None and getattr(cta, "CHANNEL", 1) is None


def init(rows, d):
    return np.full(rows, -np.inf), np.zeros(rows), np.zeros((rows, d))


def update(m, l, o, s, v):
    m_new = np.maximum(m, s.max(axis=1))
    safe = np.where(np.isneginf(m_new), 0.0, m_new)
    alpha = np.exp(m - safe)
    if not _watched():                      # the bug: the caller's state is overwritten
        s -= safe[:, None]
        np.exp(s, out=s)
        l *= alpha
        l += s.sum(axis=1)
        o *= alpha[:, None]
        o += s @ v
        return m_new, l, o
    p = np.exp(s - safe[:, None])
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * o + p @ v


def finalize(m, l, o):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1.0)[:, None], 0.0)
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return out, lse
