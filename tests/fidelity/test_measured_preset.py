"""The h200 preset takes what the microbenchmarks measured, and only that."""
import json

import pytest

from fidelity.preset import MEASURED_FIELDS, NOT_TAKEN, measured_h200, with_measurements
from sim.hardware import H200, H200_DATASHEET


def _write(tmp_path, constants):
    path = tmp_path / "h200-micro.json"
    path.write_text(json.dumps({"micro": {"environment": {}, "constants": constants, "rows": []}}))
    return path


def test_measured_constants_replace_the_datasheet(tmp_path):
    path = _write(tmp_path, {"clock_hz_under_load": 1.6e9, "sfu_exp_per_clk": 15.5,
                             "tma_latency_clk": 700})
    hw = with_measurements(H200_DATASHEET, path, "h200")
    assert (hw.clock_hz, hw.sfu_exp_per_clk, hw.tma_latency_clk) == (1.6e9, 15.5, 700.0)
    assert hw.tensor_flop_per_clk == H200_DATASHEET.tensor_flop_per_clk   # not measured: kept
    assert hw.name == "h200" and H200_DATASHEET.clock_hz == 1.83e9       # datasheet untouched


def test_no_file_means_datasheet(tmp_path):
    hw = with_measurements(H200_DATASHEET, tmp_path / "missing.json", "h200")
    assert hw == H200_DATASHEET.with_(name="h200")


def test_unknown_constant_is_refused(tmp_path):
    path = _write(tmp_path, {"warp_speed": 9})
    with pytest.raises(ValueError, match=r"unknown measured constants \['warp_speed'\]"):
        with_measurements(H200_DATASHEET, path, "h200")


def test_every_measured_field_exists():
    for field in MEASURED_FIELDS.values():
        assert hasattr(H200_DATASHEET, field)


def test_a_constant_not_taken_keeps_the_model_value(tmp_path):


    assert set(NOT_TAKEN) <= set(MEASURED_FIELDS)
    path = _write(tmp_path, {"l2_bytes_per_clk_per_sm": 36.0, "wgmma_latency_clk": 54.0})
    hw = with_measurements(H200_DATASHEET, path, "h200")
    assert hw.l2_bytes_per_clk_per_sm == H200_DATASHEET.l2_bytes_per_clk_per_sm
    assert hw.wgmma_latency_clk == 54.0


def test_the_preset_literals_are_the_committed_measurements():
    """sim/hardware.py writes the H200's measured constants as literals; they must be what
    results/h200-micro.json gives, field by field."""
    assert H200 == measured_h200()


def test_a_changed_measurement_is_caught(tmp_path):
    from fidelity.preset import MICRO
    data = json.loads(MICRO.read_text())
    data["micro"]["constants"]["sfu_exp_per_clk"] = 15.0
    path = tmp_path / "h200-micro.json"
    path.write_text(json.dumps(data))
    assert measured_h200(path) != H200
