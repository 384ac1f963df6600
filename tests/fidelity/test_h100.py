"""The `h100` preset: the GH100 die as our H200 measured it, on the paper's board
(sim/hardware.py), with three constants fitted to FA3 tab. 2 (fidelity/calibrate.py)."""
import pytest

from fidelity import calibrate
from sim.config import AttentionConfig
from sim.hardware import BOARD, GH100, H100, H100_STATIC_NS, H200
from sim.predict import predict


def test_h100_is_the_tab2_fit():
    """The preset's three fitted constants are `calibrate --tab2`'s best."""
    best = calibrate.fit_tab2(echo=False)
    assert best == {"static_ns": H100_STATIC_NS,
                    "softmax_beside_mma": H100.softmax_beside_mma,
                    "softmax_stall_per_elem": H100.softmax_stall_per_elem}
    assert H100.power_cap.base_ns == pytest.approx(H200.power_cap.base_ns + H100_STATIC_NS)


def test_h100_is_the_measured_die():
    """Every constant of the die is h200's; of the power cap only the static term differs; the
    clock's ceiling is FA3's 1830 MHz lock and HBM the H100's 3.35 TB/s."""
    assert GH100 and not set(GH100) & set(BOARD)
    for name in GH100:
        assert getattr(H100, name) == getattr(H200, name), name
    assert H100.wgmma_overhead_clk == 0.0
    assert (H100.clock_hz, H100.hbm_bytes_per_s) == (1.83e9, 3.35e12)
    for coeff in ("tensor_ns", "l2_ns_per_byte", "exp_ns"):
        assert getattr(H100.power_cap, coeff) == getattr(H200.power_cap, coeff)


@pytest.mark.parametrize("hw", [H100, H200], ids=lambda h: h.name)
@pytest.mark.parametrize("seqlen", [1024, 4096, 16384])
def test_larger_head_dims_run_closer_to_peak(hw, seqlen):
    """Exps per FLOP halve with each doubling of d (1 / 4d), so fa3's rate climbs with d on both
    presets at FA3's tiles (fig. 5's convention: B·S = 16K, H·d = 2048, non-causal)."""
    tf = [predict(AttentionConfig(variant="fa3", batch=16384 // seqlen, heads=2048 // d,
                                  seqlen=seqlen, headdim=d), hw).tflops for d in (64, 128, 256)]
    assert tf == sorted(tf), tf


def test_each_tab2_number_predicted_from_the_other_two():
    """Leave one of tab. 2's three kernels out, fit the three constants to the other two, and
    predict it: within 10 % each, and FA3's softmax beside a busy tensor core comes out 2.0 in
    every fold — the value our own kernels' cycles chose on the same die."""
    held = calibrate.tab2_held_out()
    assert set(held) == {"fa3", "ws_pingpong", "overlap"}
    for v, (fit, err) in held.items():
        assert abs(err) <= 0.10, (v, fit, err)
        assert fit["softmax_beside_mma"] == H200.softmax_beside_mma, (v, fit)
