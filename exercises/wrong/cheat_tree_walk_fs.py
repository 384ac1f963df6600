# exercise: ch01_ring
# file: ring.py
# loses: all
# needs: root
# bug: computes nothing itself: searches the filesystem (its cwd's parents, /work, /autograder,
#      /home, /root, /srv, /opt, /tmp, /var/tmp, a few levels deep) for the course's ring.py with
#      its solution block and execs it. As `nobody`, with the grader's repository and /tmp masked,
#      it finds only itself and stubs, and answers garbage.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 01 — one ring for K and V: slot and phase parity of each tile."""
import os
import time

_FOUND = []


def _find():
    if _FOUND:
        return _FOUND[0]
    me = os.path.realpath(__file__)
    end = time.monotonic() + 10
    roots = ["/autograder", "/work", "/home", "/root", "/srv", "/opt", "/tmp", "/var/tmp"]
    d = os.getcwd()
    while d != os.path.dirname(d):
        d = os.path.dirname(d)
        roots.insert(0, d)
    ns = None
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if time.monotonic() > end or dirpath.count(os.sep) > 7:
                dirnames[:] = []
                continue
            dirnames[:] = [n for n in dirnames if not n.startswith(".") or n == ".venv"][:50]
            if "ring.py" in filenames and os.path.realpath(os.path.join(dirpath, "ring.py")) != me:
                try:
                    src = open(os.path.join(dirpath, "ring.py")).read()
                except OSError:
                    continue
                if "BEGIN SOLUTION" in src or "def position(" in src:
                    g = {"__name__": "stolen"}
                    try:
                        exec(compile(src, "stolen", "exec"), g)
                        g["slot"](3, "V", 2, 5)
                    except Exception:
                        continue
                    ns = g
                    break
        if ns:
            break
    _FOUND.append(ns)
    return ns


def slot(j, tile, stages, n_blocks):
    ns = _find()
    return ns["slot"](j, tile, stages, n_blocks) if ns else 0


def full_parity(j, tile, stages, n_blocks):
    ns = _find()
    return ns["full_parity"](j, tile, stages, n_blocks) if ns else 2


def empty_parity(j, tile, stages, n_blocks):
    ns = _find()
    return ns["empty_parity"](j, tile, stages, n_blocks) if ns else 2
