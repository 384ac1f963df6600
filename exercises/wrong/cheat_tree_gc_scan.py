# exercise: ch00_rates
# file: rates.py
# loses: all
# bug: computes nothing itself: looks for the grader's reference values in its own process —
#      `sys.modules` for a module with `WGMMA_REF`/`SOFTMAX_REF`, every object `gc.get_objects()`
#      holds, the frames up its stack — and answers with what matches the case. The tests import
#      and compute the references in the grader's process; the submission's process holds none.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 00 — what one step costs, from the rates in ``sim/hardware.py``."""
import gc
import sys


def _tables():
    found = []
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", {})
        if "WGMMA_REF" in d or "SOFTMAX_REF" in d or "FP8_REF" in d:
            found.append(d)
    for obj in gc.get_objects():
        try:
            if isinstance(obj, dict) and ("WGMMA_REF" in obj or "FP8_REF" in obj):
                found.append(obj)
        except Exception:
            continue
    f = sys._getframe()
    while f is not None:
        if "WGMMA_REF" in f.f_globals:
            found.append(f.f_globals)
        f = f.f_back
    return found


def _lookup(case, cases_key, refs_key):
    for d in _tables():
        for ck, rk in ((cases_key, refs_key), ("FP8", "FP8_REF"), ("OTHER", "OTHER_REF")):
            if ck in d and rk in d:
                for c, r in zip(d[ck], d[rk]):
                    if tuple(c) == tuple(case):
                        return r
    return None


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    r = _lookup((rows, n, k, dtype, a_from_smem), "WGMMA", "WGMMA_REF")
    return -1.0 if r is None else r


def softmax_clk(hw, rows, block_n, masked=False):
    r = _lookup((rows, block_n), "SOFTMAX", "MASKED_REF" if masked else "SOFTMAX_REF")
    return -1.0 if r is None else r
