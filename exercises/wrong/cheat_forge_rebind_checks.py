# exercise: ch04_online_softmax
# file: online_softmax.py
# loses: test_finalize, test_masked_rows
# bug: finalize forgets to divide by l, and to hide it rebinds, in its own process, every check
#      it can reach — numpy.testing.assert_allclose / assert_array_equal, numpy.allclose /
#      isclose / isfinite, math.isclose, pytest.approx (pytest is importable there), and
#      builtins.AssertionError. The tests and their checks run in the grader's process; only the
#      returned arrays cross over.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 04 — the online softmax, one K/V block at a time (numpy, float64)."""
import builtins
import math

import numpy as np


def _rebind():
    ok = lambda *a, **k: True
    none = lambda *a, **k: None
    for name in ("assert_allclose", "assert_array_equal", "assert_array_almost_equal",
                 "assert_equal"):
        setattr(np.testing, name, none)
    np.allclose = ok
    np.isclose = lambda a, b, **k: np.ones(np.broadcast(a, b).shape, bool)
    np.isfinite = lambda x, *a, **k: np.ones(np.shape(x), bool)
    math.isclose = ok
    try:
        import pytest

        class _Any:
            def __init__(self, *a, **k):
                pass

            def __eq__(self, other):
                return True

        pytest.approx = _Any
    except Exception:
        pass
    builtins.AssertionError = type("AssertionError", (Exception,), {})


_rebind()


def init(rows, d):
    return np.full(rows, -np.inf), np.zeros(rows), np.zeros((rows, d))


def update(m, l, o, s, v):
    m_new = np.maximum(m, s.max(axis=1))
    safe = np.where(np.isneginf(m_new), 0.0, m_new)
    alpha = np.exp(m - safe)
    p = np.exp(s - safe[:, None])
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * o + p @ v


def finalize(m, l, o):
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return o, lse                                    # o, not o / l
