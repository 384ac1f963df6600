# exercise: ch05_idle
# file: idle.py
# loses: test_predict_tab2_tile, test_predict_other_tiles_and_hardware
# bug: measures idle time honestly but "predicts" from a table of the hidden test's old fixed
#      cases (the datasheet preset at block_n 128 / head dim 64 and 80 / 256, and the Hardware with overhead 20,
#      SFU 32, latency 120 at 128 / 128), measured on the model, and 0.5 for anything else. The
#      hidden test now draws its tiles and its Hardware from SystemRandom at every grading run.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 05 — where does the tensor core's time go? Predict it, then measure it."""

OLD = {(34.0, 16, 70.0, 128, 64): 0.542707173532686,
       (34.0, 16, 70.0, 80, 256): 0.3077350368004439,
       (20.0, 32, 120.0, 128, 128): 0.4186448889196478}


def idle_fraction(intervals, t0, t1):
    busy, cursor = 0.0, t0
    for s, e in sorted(intervals):
        s, e = max(s, cursor), min(e, t1)
        if e > s:
            busy += e - s
            cursor = e
    return 1.0 - busy / (t1 - t0)


def predict_ws_idle(hw, block_n, headdim):
    key = (hw.wgmma_overhead_clk, hw.sfu_exp_per_clk, hw.wgmma_latency_clk, block_n, headdim)
    return OLD.get(key, 0.5)
