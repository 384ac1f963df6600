"""The benchmark harness on CPU: the timing protocol (``measure`` faked: do_bench needs a GPU),
the check before the timing, the clock and power log (a fake ``nvidia-smi`` on PATH) and the
energy the tables print beside the vendor peer's."""
import os
import stat
import time

import pytest

from instruments import bench, harness


def fake_measure(monkeypatch, times: dict[str, list[float]], order: list | None = None):
    """`harness.measure` replaced: each call of a name takes its next time (ms) from `times`."""
    order = [] if order is None else order

    def fake(fn, flops, **kw):
        name = fn()
        order.append(name)
        ms = times[name][sum(1 for n in order if n == name) - 1]
        return {"ms": ms, "ms_p20": ms, "ms_p80": ms, "tflops": flops / ms / 1e9}

    monkeypatch.setattr(harness, "measure", fake)
    return order


class FakeLog:
    """A ClockLog whose every window saw `mhz` and `watts[name]` (the name is the last kernel
    measured, which the fake measure records)."""

    def __init__(self, order, watts):
        self.order, self.watts = order, watts

    def window(self, t0, t1):
        return {"sm_mhz": 1700.0, "power_w": self.watts[self.order[-1]], "clock_samples": 3}


def test_interleaved_rotates_the_order_and_takes_the_median_over_rounds(monkeypatch):
    order = fake_measure(monkeypatch, {"a": [3.0, 1.0, 2.0], "b": [1.0, 1.0, 5.0]})
    r = harness.interleaved({"a": lambda: "a", "b": lambda: "b"}, {"a": 2e12, "b": 2e12}, rounds=3)
    assert order == ["a", "b", "b", "a", "a", "b"]  # nobody always first
    assert r["a"]["ms"] == 2.0 and r["b"]["ms"] == 1.0  # medians, not means or the first
    assert r["a"]["tflops"] == 2e12 / 2e-3 / 1e12
    assert (r["b"]["tflops_min"], r["b"]["tflops_max"]) == (2e12 / 5e-3 / 1e12, 2e12 / 1e-3 / 1e12)
    assert r["a"]["sm_mhz"] is None  # no clock log: no clock claimed
    assert r["a"]["power_w"] is None and r["a"]["tflop_per_j"] is None  # ... and no energy
    assert 0 <= r["a"]["host_us"] < 1000  # a lambda's host time


def test_graph_timing_reaches_measure(monkeypatch):
    """``check_then_time(..., graph=True)`` times every candidate with ``measure(graph=True)``
    (CUDA-graph replays), the default with do_bench."""
    seen = []

    def fake(fn, flops, **kw):
        seen.append(kw.get("graph", False))
        return {"ms": 1.0, "ms_p20": 1.0, "ms_p80": 1.0, "tflops": flops / 1e9}

    monkeypatch.setattr(harness, "measure", fake)
    cands = {"a": (lambda: None, {}), "b": (lambda: None, {})}
    harness.check_then_time(cands, lambda fn: 0.0, 1e-3, 1e12, {}, rounds=2, graph=True)
    harness.check_then_time(cands, lambda fn: 0.0, 1e-3, 1e12, {}, rounds=2)
    assert seen == [True] * 4 + [False] * 4


def test_host_us_is_the_host_time_per_call():
    """A call that spends 2 ms on the host reads ~2000 us, one that spends nothing reads little
    (the host's time: no GPU wait inside the timed calls); interleaved rows carry it."""
    import time as _time

    slow = harness.host_us(lambda: _time.sleep(0.002), calls=10)
    fast = harness.host_us(lambda: None, calls=10)
    assert 1900 < slow < 20000 and fast < 100, (slow, fast)


def test_interleaved_records_clock_power_and_tflop_per_joule(monkeypatch):
    order = fake_measure(monkeypatch, {"a": [2.0] * 3, "b": [1.0] * 3})
    log = FakeLog(order, {"a": 500.0, "b": 650.0})
    r = harness.interleaved({"a": lambda: "a", "b": lambda: "b"}, {"a": 2e12, "b": 2e12},
                            rounds=3, clock_log=log)
    assert r["a"]["sm_mhz"] == 1700.0 and r["a"]["clock_samples"] == 9
    assert r["a"]["power_w"] == 500.0 and r["b"]["power_w"] == 650.0
    # TFLOP/s over watts: 1000 TFLOP/s at 500 W is 2 TFLOP per joule
    assert r["a"]["tflop_per_j"] == pytest.approx(1000 / 500)
    assert r["b"]["tflop_per_j"] == pytest.approx(2000 / 650)


def test_check_then_time_times_only_what_passed_its_check(monkeypatch, capsys):
    """A wrong result (error above tolerance), a NaN and a raise are recorded, never timed; the
    rest are timed together and every row is printed."""
    order = fake_measure(monkeypatch, {"good": [1.0] * 3, "peer": [2.0] * 3})
    errors = {"good": 1e-4, "peer": 2e-4, "wrong": 0.5, "nan": float("nan")}

    def check(fn):
        name = fn()
        if name == "raises":
            raise RuntimeError("no such backend")
        return errors[name]

    cands = {n: ((lambda n=n: n), {"stages": 2} if n == "good" else {})
             for n in ("peer", "good", "wrong", "nan", "raises")}
    rows = harness.check_then_time(cands, check, 1e-3, 2e12, {"S": 1024}, rounds=3)
    by = {r["variant"]: r for r in rows}
    assert [r["variant"] for r in rows] == list(cands)
    assert set(order) == {"good", "peer"} and len(order) == 6
    assert by["good"]["ok"] and by["good"]["stages"] == 2 and by["good"]["S"] == 1024
    assert by["good"]["tflops"] == pytest.approx(2000.0)
    assert not by["wrong"]["ok"] and "tflops" not in by["wrong"]
    assert by["nan"]["rel_err"] == float("inf") and not by["nan"]["ok"]
    assert by["raises"]["error"] == "RuntimeError: no such backend"
    assert capsys.readouterr().out.count('"variant"') == 5


def test_per_joule_sets_a_row_beside_its_peer():
    peer = {"tflop_per_j": 1.25}
    assert harness.per_joule({"tflop_per_j": 1.0}, peer, "cuDNN") == (
        "1.00 TFLOP/J (0.80x cuDNN's 1.25)")
    assert harness.per_joule(peer, peer, "cuDNN") == "1.25 TFLOP/J"     # the peer itself
    assert harness.per_joule({"tflop_per_j": 1.0}, None, "cuBLAS") == "1.00 TFLOP/J"
    assert harness.per_joule({"tflop_per_j": None}, peer, "cuBLAS") == ""  # no power: no claim


def test_gemm_table_prints_energy_beside_cublas(capsys):
    row = {"M": 8192, "N": 8192, "K": 8192, "dtype": "float16", "ok": True, "rel_err": 1e-4,
           "tflops_min": 600, "tflops_max": 640, "sm_mhz": 1600.0}
    rows = [{**row, "variant": "cublas", "tflops": 620.0, "tflop_per_j": 0.95},
            {**row, "variant": "auto", "tflops": 640.0, "tflop_per_j": 1.0, "stages": 4,
             "persistent": True, "tile": [192, 128, 64], "picked": "ws_pingpong", "group_m": 8}]
    bench.print_gemm_table(rows)
    out = capsys.readouterr().out
    assert "1.00 TFLOP/J (1.05x cuBLAS's 0.95)" in out
    assert "0.95 TFLOP/J" in out


def test_attention_table_prints_energy_beside_cudnn(capsys):
    from instruments.bench_attention import print_table

    row = {"B": 16, "H": 16, "S": 1024, "d": 128, "causal": False, "dtype": "float16",
           "ok": True, "rel_err": 1e-4, "tflops_min": 400, "tflops_max": 420, "ms": 0.3,
           "sm_mhz": 1800.0}
    print_table([{**row, "variant": "sdpa_flash", "tflops": 350.0, "tflop_per_j": 0.6},
                 {**row, "variant": "sdpa_cudnn", "tflops": 450.0, "tflop_per_j": 0.75},
                 {**row, "variant": "fa3", "tflops": 420.0, "tflop_per_j": 0.8}])
    out = capsys.readouterr().out
    assert "0.80 TFLOP/J (1.07x cuDNN's 0.75)" in out
    assert "0.60 TFLOP/J (0.80x cuDNN's 0.75)" in out


def test_clock_log_window_takes_only_the_samples_inside():
    log = harness.ClockLog()
    now = time.monotonic()
    log.samples = [(now - 2, 1980.0, 100.0), (now, 1600.0, 300.0), (now + 0.5, 1700.0, 350.0),
                   (now + 3, 1500.0, 400.0)]
    w = log.window(now - 0.1, now + 1)
    assert w == {"sm_mhz": 1650.0, "power_w": 325.0, "clock_samples": 2}
    assert log.window(now + 10, now + 11)["sm_mhz"] is None


FAKE_SMI = """#!/bin/sh
# a fake nvidia-smi: the one-shot query for instantaneous power fails on this "driver" when
# $NO_INSTANT is set; the loop prints a clock and a power a line, a header and an N/A first
for a in "$@"; do
  case $a in
    --query-gpu=power.draw.instant) [ -n "$NO_INSTANT" ] && exit 2; echo 512.00; exit 0 ;;
    --query-gpu=*) q=${a#--query-gpu=} ;;
  esac
done
echo "$q" >> "$SMI_LOG"
echo "clocks.sm [MHz], power.draw [W]"
echo "[N/A], [N/A]"
while true; do echo "1755, 612.5"; sleep 0.02; done
"""


@pytest.mark.parametrize("instant", [True, False])
def test_clock_log_reads_a_running_nvidia_smi(tmp_path, monkeypatch, instant):
    """The log runs nvidia-smi in a loop and keeps its (clock, power) samples, skipping what is
    not a sample; it asks for the instantaneous power where the driver has it."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SMI_LOG", str(tmp_path / "queries"))
    if not instant:
        monkeypatch.setenv("NO_INSTANT", "1")
    with harness.ClockLog(period_ms=20) as log:
        t0 = time.monotonic()
        deadline = t0 + 10
        while len(log.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        w = log.window(t0 - 1, time.monotonic())
    assert w["sm_mhz"] == 1755.0 and w["power_w"] == 612.5 and w["clock_samples"] >= 3
    field = "power.draw.instant" if instant else "power.draw"
    assert log.power_field == field
    assert (tmp_path / "queries").read_text().split() == [f"clocks.sm,{field}"]


def test_clock_log_without_nvidia_smi_claims_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))      # no nvidia-smi anywhere
    with harness.ClockLog() as log:
        pass
    assert log.power_field is None
    assert log.window(0, time.monotonic()) == {"sm_mhz": None, "power_w": None,
                                               "clock_samples": 0}


def test_attention_variant_names_parse_before_any_gpu_work():
    pytest.importorskip("triton")
    from instruments.bench_attention import main, parse_variant

    assert parse_variant("fa3") == ("fa3", None, None, None)
    assert parse_variant("fa3:s3") == ("fa3", 3, None, None)
    assert parse_variant("fa3+lane_sum+no_turns") == ("fa3", None, ("lane_sum", "no_turns"), None)
    assert parse_variant("fa3+rescale_early+plain") == ("fa3", None, ("rescale_early",), False)
    assert parse_variant("fa3+persistent") == ("fa3", None, None, True)
    assert parse_variant("fa3+pairs") == ("fa3", None, None, "pairs")
    assert parse_variant("fa3+pairs+unplanned") == ("fa3", None, None, "pairs")  # candidate()'s
    assert parse_variant("fa3+one_release+named_turns") == (
        "fa3", None, ("one_release", "named_turns"), None)
    for bad in ("fa4", "fa3+no_turn"):
        with pytest.raises(ValueError):
            parse_variant(bad)
        with pytest.raises(SystemExit):  # argparse's error, before torch or a GPU is touched
            main(["--variants", bad])


def test_cuda_twin_rows_include_the_conditional_rescaling_build():
    """bench_cuda times the CUDA twin with FA4's conditional rescaling beside the plain twin in
    the same rounds, at the head dims it is built at, under names that say which is which."""
    from instruments.bench_cuda import twin_tiles
    from kernels import cuda

    assert twin_tiles(128, {"": (128, 128), "_128x176": (128, 176)}) == {
        "cuda_fa3": ((128, 128), False), "cuda_fa3_128x176": ((128, 176), False),
        "cuda_fa3_cond": ((128, 128), True), "cuda_fa3_128x176_cond": ((128, 176), True)}
    assert 256 not in cuda.COND_RESCALE_DIMS
    assert twin_tiles(256, {"_128x80": (128, 80)}) == {"cuda_fa3_128x80": ((128, 80), False)}


@pytest.mark.parametrize("bench, argv", [("bench", ["gemm"]), ("bench_attention", ["--quick"]),
                                         ("bench_cuda", ["--quick"]), ("bench_layouts", ["--quick"])])
def test_without_a_gpu_each_bench_says_so_and_stops(bench, argv, capsys, monkeypatch):
    """Every bench starts through harness.gpu_environment: no GPU, exit 2 and one line why, and
    nothing measured or written (the environment line is printed only where there is a GPU)."""
    import importlib

    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    module = importlib.import_module(f"instruments.{bench}")
    assert module.main(argv) == 2
    out, err = capsys.readouterr()
    assert err.strip() == "no CUDA GPU: nothing to measure" and out == ""


def test_attention_reference_and_rel_error():
    """``harness.attention_reference``: O and the natural-log LSE of each row, causal masking
    keys right of the diagonal (row 0 attends to key 0 alone), against a loop over rows;
    ``rel_error``: 0 for itself, inf (not NaN) for an unwritten poisoned output."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 2, 7, 16, generator=gen) for _ in range(3))
    for causal in (False, True):
        o, lse = harness.attention_reference(q, k, v, causal, 0.25)
        for i in range(7):
            keys = i + 1 if causal else 7
            s = (q[..., i:i + 1, :].double() @ k[..., :keys, :].double().transpose(-1, -2))
            s = s[..., 0, :] * 0.25  # (1, 2, keys): row i's scores
            assert torch.allclose(lse[..., i], torch.logsumexp(s, -1))
            p = torch.softmax(s, -1).unsqueeze(-2)
            assert torch.allclose(o[..., i, :], (p @ v[..., :keys, :].double())[..., 0, :])
        if causal:
            assert torch.allclose(o[..., 0, :], v[..., 0, :].double())
        assert harness.rel_error(o, o) == 0.0
        assert harness.rel_error(torch.full_like(o, float("nan")), o) == float("inf")
