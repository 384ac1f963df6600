# exercise: ch03_pingpong
# file: pingpong.py
# loses: all
# bug: writes nothing: takes the model's own pingpong consumer (`from sim.attention.ws_pingpong
#      import consumer`, through the editable install's finder or a guessed checkout) and its
#      `cta.wait_turn` / `cta.pass_turn`. The sandbox has no `sim`, and the CTA it is handed is a
#      stand-in with only a role's calls (no turn helpers), so every test fails.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 03 — pingpong: two consumer warpgroups take turns on the tensor core."""
import os
import sys


def _model_consumer():
    try:
        from sim.attention.ws_pingpong import consumer
        return consumer
    except Exception:
        pass
    for p in list(sys.path):
        try:
            for name in os.listdir(p):
                if name.startswith("__editable__") and name.endswith("_finder.py"):
                    __import__(name[:-3]).install()
        except Exception:
            continue
    for root in ("/work/main", "/autograder/source"):
        if root not in sys.path:
            sys.path.append(root)
    try:
        from sim.attention.ws_pingpong import consumer
        return consumer
    except Exception:
        return None


def wait_turn(cta, w, k):
    yield from cta.wait_turn(w, k)                  # the model's helper, not a role's call


def pass_turn(cta, w):
    cta.pass_turn(w)


def consumer(cta, w):
    theirs = _model_consumer()
    if theirs is None:
        raise ImportError("no sim here")
    yield from theirs(cta, w)
