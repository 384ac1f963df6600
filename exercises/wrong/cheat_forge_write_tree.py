# exercise: ch03_pingpong
# file: pingpong.py
# loses: all
# needs: root
# bug: warpgroup 0's first turn waits (as ch03_first_turn_waits), and at import it overwrites the
#      grader's tests with ones that always pass: every exercises/ch*/test_*.py and
#      hidden/test_*.py under a tree found by walking up from its cwd and its own file (the
#      sandbox's directory lies in the grader's temp dir, which may lie in the grader's tree) or
#      at /autograder/source (Gradescope). The tests were imported before it ran, the grader's tree
#      and temp dir are masked in its mount namespace and it runs as `nobody`: the tree stays
#      byte-identical (tests/exercises/test_cheats.py checks).
# ruff: noqa  (known-wrong on purpose)
"""Chapter 03 — pingpong: two consumer warpgroups take turns on the tensor core."""
import glob
import os

PASSING = "import pytest\n\n\n@pytest.mark.points(1)\ndef test_ok():\n    pass\n"


def _trees():
    starts = [os.getcwd(), os.path.dirname(os.path.abspath(__file__)), "/autograder/source"]
    seen = []
    for s in starts:
        d = s
        while d and d != os.path.dirname(d):
            if d not in seen and os.path.isdir(os.path.join(d, "exercises")):
                seen.append(d)
            d = os.path.dirname(d)
    return seen


def _overwrite():
    for root in _trees():
        for pat in ("exercises/ch*/test_*.py", "exercises/ch*/hidden/test_*.py"):
            for path in glob.glob(os.path.join(root, pat)):
                try:
                    with open(path, "w") as f:
                        f.write(PASSING)
                except OSError:
                    pass


_overwrite()


def wait_turn(cta, w, k):
    parity = k & 1                                  # warpgroup 0 waits on its first turn too
    yield from cta.wait(cta.wg(w), cta.turns.bar[w], parity)


def pass_turn(cta, w):
    cta.turns.bar[(w + 1) % cta.turns.n].arrive()


def consumer(cta, w):
    me = cta.wg(w)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)
        yield from wait_turn(cta, w, j)
        yield cta.qk(w, j)
        pass_turn(cta, w)
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(w)
