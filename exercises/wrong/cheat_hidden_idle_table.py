# exercise: ch05_idle
# file: idle.py
# loses: test_predict_tab2_tile, test_predict_other_tiles_and_hardware, test_predict_at_a_formulas_speed
# bug: measures the exposed softmax honestly but "predicts" from a table of the hidden test's old fixed
#      cases (the datasheet preset at block_n 128 / head dim 64 and 80 / 256, and the Hardware with overhead 20,
#      SFU 32, latency 120 at 128 / 128), measured on the model, and 0.5 for anything else. The
#      hidden test now draws its tiles and its Hardware from SystemRandom at every grading run.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 05 — where does the tensor core's time go? Predict it, then measure it."""

OLD = {(34.0, 16, 70.0, 128, 64): 0.542707173532686,
       (34.0, 16, 70.0, 80, 256): 0.3077350368004439,
       (20.0, 32, 120.0, 128, 128): 0.4186448889196478}


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



def predict_ws_idle(hw, block_n, headdim):
    key = (hw.wgmma_overhead_clk, hw.sfu_exp_per_clk, hw.wgmma_latency_clk, block_n, headdim)
    return OLD.get(key, 0.5)
