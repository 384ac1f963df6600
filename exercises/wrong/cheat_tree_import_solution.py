# exercise: ch00_rates
# file: rates.py
# loses: all
# needs: root
# bug: computes nothing itself: imports the course's own solution (`exercises.ch00_rates.rates`),
#      first as installed, then from guessed checkouts (walking up from its own file and from
#      site-packages, /work/main, /autograder/source) put on sys.path. The sandbox runs it with
#      `python -I -S` (no .pth, no cwd on the path) and masks the grader's repository and /tmp, so
#      every import fails and it answers garbage.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 00 — what one step costs, from the rates in ``sim/hardware.py``."""
import os
import sys


def _solution():
    try:
        from exercises.ch00_rates import rates as sol          # the editable install, if any
        return sol
    except Exception:
        pass
    guesses = ["/work/main", "/autograder/source", "/autograder", os.getcwd()]
    for start in [os.path.dirname(os.path.abspath(__file__)), *sys.path]:
        d = start
        while d and d != os.path.dirname(d):
            guesses.append(d)
            d = os.path.dirname(d)
    for root in guesses:
        try:
            if os.path.isfile(os.path.join(root, "exercises", "ch00_rates", "rates.py")):
                sys.path.insert(0, root)
                sys.modules.pop("exercises", None)
                from exercises.ch00_rates import rates as sol
                return sol
        except Exception:
            continue
    return None


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    sol = _solution()
    if sol is None:
        return -1.0
    return sol.wgmma_group_clk(hw, rows, n, k, dtype, a_from_smem)


def softmax_clk(hw, rows, block_n, masked=False):
    sol = _solution()
    if sol is None:
        return -1.0
    return sol.softmax_clk(hw, rows, block_n, masked)
