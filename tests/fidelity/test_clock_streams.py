"""The sustained L2 and exp2 streams (instruments/micro/clock.py, results/h200-clock.json) as points
of the power cap's plane (fidelity/calibrate.py): read when the file is there, nothing changed
when it is not, and what they do to the fit — on synthetic rows, since nothing is measured yet."""
import json

import pytest

from fidelity import calibrate, crossval
from fidelity.calibrate import (STREAM_NAMES, ceiling_points, clock_points, fit_power_cap,
                                stream_points)
from sim.hardware import H200_MEASURED

CAP = H200_MEASURED["power_cap"]
L2, EXP = 36.2, 15.96            # the short runs' rates, h200-micro.json


def stream(bench, hz, l2=0.0, exps=0.0, ok=True, seconds=2.0):
    return {"bench": bench, "ok": ok, "seconds": seconds, "tensor_util": 0.0,
            "l2_bytes_per_clk_per_sm": l2, "exps_per_clk_per_sm": exps,
            "clock_hz_globaltimer": hz}


@pytest.fixture
def streams(tmp_path):
    def write(*rows):
        path = tmp_path / "h200-clock.json"
        path.write_text(json.dumps(list(rows)))
        return path
    return write


@pytest.fixture
def without(tmp_path):
    """The points as they are with no stream file."""
    return clock_points(tmp_path / "absent.json")


def test_without_the_file_the_points_are_todays(without):
    assert not {p.name for p in without} & set(STREAM_NAMES.values())
    assert [p for p in clock_points() if p.name not in STREAM_NAMES.values()] == without


def test_streams_are_read_with_their_activity_and_belong_to_no_family(streams, without):
    path = streams(stream("clock_l2", 1.70e9, l2=L2), stream("clock_exp", 1.65e9, exps=EXP),
                   {"bench": "clock", "ok": True, "clock_hz_globaltimer": 1.5e9})
    pts = clock_points(path)
    new = [p for p in pts if p not in without]
    assert [(p.name, p.tensor_util, p.l2_bytes_per_clk, p.exps_per_clk, p.clock_hz) for p in new] \
        == [("L2 stream", 0.0, L2, 0.0, 1.70e9), ("exp2 stream", 0.0, 0.0, EXP, 1.65e9)]
    assert len(pts) == len(without) + 2
    assert all(crossval.families_of(p.workload, p.variant, p.headdim) == () for p in new)


def test_an_l2_stream_under_the_plane_raises_the_l2_cost(streams, without):
    """The plane gives 1.99 GHz at 36 B/clk with no tensor work; a stream measured at 1.70 GHz
    says an L2 byte costs more (least squares shares the miss with the base term: the stream
    is the only point with no tensor work; on these points L2 +14 %, base +10 %)."""
    base = fit_power_cap(without)[0]
    cap = fit_power_cap(clock_points(streams(stream("clock_l2", 1.70e9, l2=L2))))[0]
    assert cap.l2_ns_per_byte > 1.1 * base.l2_ns_per_byte
    assert cap.clock_hz(0.0, L2, 3e9) < 0.95 * base.clock_hz(0.0, L2, 3e9)


def test_an_exp_stream_under_the_plane_raises_the_exp_cost(streams, without):
    base = fit_power_cap(without)[0]
    cap = fit_power_cap(clock_points(streams(stream("clock_exp", 1.60e9, exps=EXP))))[0]
    assert cap.exp_ns > 1.2 * base.exp_ns


def test_a_ceiling_short_or_failed_stream_is_no_point(streams, without, monkeypatch, capsys):
    """At the ceiling the plane need only reach it (a bound, not a point: printed, not fitted);
    a run under a second is too short for the limit to act; a failed check is no measurement."""
    path = streams(stream("clock_l2", 1.975e9, l2=L2), stream("clock_exp", 1.6e9, exps=EXP, ok=False),
                   stream("clock_exp", 1.6e9, exps=EXP, seconds=0.02))
    assert [p.name for p in stream_points(path)] == ["L2 stream"]
    assert clock_points(path) == without
    monkeypatch.setattr(calibrate, "STREAMS", path)
    calibrate.print_power_cap()
    assert "at the ceiling, a bound" in capsys.readouterr().out


def test_the_streams_bounds_hold_the_plane_with_the_gemms_out():
    """Finding 1 of the cross-validation: with the GEMM traces held out, the other points leave
    the L2 coefficient free (it comes out 1.9 times the preset's, and every GEMM's clock 6-13 %
    low). The committed streams (results/h200-clock.json) ran at the ceiling: as bounds
    they hold it within 50 % of the preset's and each traced GEMM's clock within 10 %."""
    kept = [p for p in clock_points() if p.workload != "gemm"]
    gemms = [p for p in clock_points() if p.workload == "gemm"]
    free = fit_power_cap(kept)[0]
    bounded = fit_power_cap(kept, bounds=ceiling_points())[0]
    assert free.l2_ns_per_byte > 1.5 * CAP.l2_ns_per_byte
    assert bounded.l2_ns_per_byte == pytest.approx(CAP.l2_ns_per_byte, rel=0.5)

    def worst(cap):
        return max(abs(cap.clock_hz(p.tensor_util, p.l2_bytes_per_clk, 3e9) / p.clock_hz - 1)
                   for p in gemms)
    assert worst(free) > 0.10 and worst(bounded) < 0.10