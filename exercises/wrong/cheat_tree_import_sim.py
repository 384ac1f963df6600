# exercise: ch05_idle
# file: idle.py
# loses: test_predict_tab2_tile, test_predict_other_tiles_and_hardware, test_predict_at_a_formulas_speed
# needs: root
# bug: measures the exposed softmax honestly, but "predicts" by running the course's model: `import sim`
#      through the editable install's finder module in site-packages, or from a guessed checkout
#      (/work/main, /autograder/source, walking up from site-packages), rebuilding a
#      `sim.Hardware` from the read-only record it is handed. The sandbox has no `sim` on its path
#      and masks the grader's repository, so the import fails and the prediction is garbage.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 05 — where does the tensor core's time go? Predict it, then measure it."""
import os
import sys


def exposed_softmax(tensor, sfu, t0, t1):
    # sweep the ends of both units' intervals in time order, counting how many of each are open
    marks = sorted([(s, unit, 1) for unit, ivs in enumerate((tensor, sfu)) for s, _ in ivs]
                   + [(e, unit, -1) for unit, ivs in enumerate((tensor, sfu)) for _, e in ivs])
    open_, exposed, last = [0, 0], 0.0, t0
    for t, unit, step in marks:
        a, b = max(last, t0), min(t, t1)
        if b > a and open_[1] and not open_[0]:
            exposed += b - a
        last = max(last, t)
        open_[unit] += step
    return exposed / (t1 - t0)



def _sim():
    try:
        import sim
        return sim
    except Exception:
        pass
    for p in list(sys.path):                        # the editable install's import hook
        try:
            for name in os.listdir(p):
                if name.startswith("__editable__") and name.endswith("_finder.py"):
                    finder = __import__(name[:-3])
                    finder.install()
                    import sim
                    return sim
        except Exception:
            continue
    guesses = ["/work/main", "/autograder/source"]
    for start in sys.path:
        d = start
        while d and d != os.path.dirname(d):
            guesses.append(d)
            d = os.path.dirname(d)
    for root in guesses:
        if os.path.isfile(os.path.join(root, "sim", "__init__.py")):
            try:
                sys.path.insert(0, root)
                import sim
                return sim
            except Exception:
                continue
    return None


def predict_ws_idle(hw, block_n, headdim):
    sim = _sim()
    if sim is None:
        return 0.5
    import dataclasses
    fields = {f.name for f in dataclasses.fields(sim.Hardware)}
    real = sim.Hardware(**{k: v for k, v in hw._fields.items() if k in fields})
    run = sim.simulate(sim.AttentionConfig(variant="ws", consumers=1, block_m=64, block_n=block_n,
                                           headdim=headdim), real, n_blocks=40)
    spans = {}
    for i in run.trace.intervals:
        if i.unit == "tensor" and i.op == "QKᵀ":
            spans.setdefault((i.actor, i.tile), i.start)
    starts = sorted(spans.values())
    busy = [(i.start, i.end) for i in run.trace.intervals if i.unit == "tensor"]
    return 1.0 - exposed_softmax([], busy, starts[5], starts[35])
