"""The model's predictions for the three queued device probes (fidelity/probes.py): each is the
model running the benchmark, and each moves with the constant it stands on."""
import json

import pytest

from fidelity import probes
from sim import hardware

H200 = hardware.get("h200")


def test_pair_round_trips_are_hand_offs_plus_the_crossing():
    """Two hand-offs a round trip: local 2 × mbarrier_clk; across the pair each hand-off
    sm_pair_hop_clk later, so the crossing the benchmark reads is the model's hop."""
    p = probes.pair_round_trips()
    hop = hardware.get("b200").sm_pair_hop_clk
    assert hop > 0
    assert p["local"] == pytest.approx(2 * H200.mbarrier_clk)
    assert p["remote"] == pytest.approx(2 * (H200.mbarrier_clk + hop))
    assert p["crossing_clk"] == pytest.approx(hop)
    assert probes.pair_round_trips(hop=0.0)["remote"] == pytest.approx(p["local"])


def test_rescale_beside_qk_is_stretched_by_the_busy_tensor_core():
    """The FMULs alone: one per O element at the FMA pipe's rate; beside the queued Q·Kᵀ,
    softmax_beside_mma times that (the model's 386 clk at d 256); without the stretch the two are
    equal. Q·Kᵀ alone takes at least its 16 × 32 clk of math from the first issue."""
    s = probes.rescale_spans()
    beside, alone, qk = (s[m] for m in probes.RESCALE_MODES)
    assert alone["fmul"] == pytest.approx(64 * 256 / H200.fma_lanes_per_clk)
    assert alone["issue"] == alone["wait"] == 0
    assert beside["fmul"] == pytest.approx(alone["fmul"] * H200.softmax_beside_mma)
    assert qk["fmul"] == 0 and qk["group"] >= 16 * 32
    assert beside["issue"] == pytest.approx(qk["issue"])
    flat = probes.rescale_spans(H200.with_(softmax_beside_mma=1.0))
    assert flat["FMULs after Q·Kᵀ"]["fmul"] == pytest.approx(alone["fmul"])


def test_no_turns_locks_the_model_consumers_together():
    """At the committed d 256 trace's configuration the model's consumers alternate with turns
    (several hundred clk apart, as the trace's CTAs are) and issue together without them, the
    block longer for it."""
    p = probes.consumer_phases()
    assert p["with_turns"]["phase_clk"] > 500 and min(p["measured_with_turns"]) > 500
    assert p["no_turns"]["phase_clk"] < 100
    assert p["no_turns"]["block_clk"] > p["with_turns"]["block_clk"]


def test_report_prints_the_computed_numbers_and_any_measurement(monkeypatch, tmp_path):
    text = probes.report()
    assert f"{probes.pair_round_trips()['crossing_clk']:.1f} clk a hand-off" in text
    assert f"{probes.rescale_spans()['FMULs after Q·Kᵀ']['fmul']:.0f} clk beside" in text
    monkeypatch.setattr(probes, "RESULTS", tmp_path)
    (tmp_path / "h200-rescale.json").write_text(json.dumps(
        [{"mode": m, "fmul_clk": 100.0 + i, "group_clk": 500.0}
         for i, m in enumerate(probes.RESCALE_MODES)]))
    assert "h200 measured rescale: FMULs after Q·Kᵀ: FMULs 100 clk, group 500" in probes.report()
    assert "h100 measured rescale" not in probes.report()


def test_the_h100_measurements_read_in_the_models_terms():
    """The H100's committed probes (results/h100-*.json, traces/h100/): the pair's local round
    trip and crossing, the rescale's FMULs, the d 256 traces' consumer phase — the machine's
    two consumers half a block apart with turns and without, where the model's lock together
    without."""
    got = probes.measured()["h100"]
    lines = "\n".join(probes.measured_lines("h100", got))
    local = next(r for r in got["pair"] if r.get("mode") == "local")
    assert f"round trip local {local['clk_per_round_trip']:.1f}" in lines
    beside = next(r for r in got["rescale"] if r["mode"] == probes.RESCALE_MODES[0])
    assert f"FMULs {beside['fmul_clk']:.0f} clk" in lines
    for key in ("with_turns", "no_turns"):
        phase, block = got[f"{key}_phase"], got[f"{key}_block"]
        assert all(0.4 * block < p < 0.6 * block for p in phase), (key, phase, block)
        assert f"measured {key}: phase" in lines
    assert probes.consumer_phases()["no_turns"]["phase_clk"] < 0.1 * block
