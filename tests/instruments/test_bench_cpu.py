"""The benchmark's timing protocol, on CPU (``measure`` faked: do_bench needs a GPU)."""
import time

import pytest

from instruments import bench


def test_interleaved_rotates_the_order_and_takes_the_median_over_rounds(monkeypatch):
    order, times = [], {"a": [3.0, 1.0, 2.0], "b": [1.0, 1.0, 5.0]}

    def fake(fn, flops, **kw):
        name = fn()
        order.append(name)
        ms = times[name][sum(1 for n in order if n == name) - 1]
        return {"ms": ms, "ms_p20": ms, "ms_p80": ms, "tflops": flops / ms / 1e9}

    monkeypatch.setattr(bench, "measure", fake)
    r = bench.interleaved({"a": lambda: "a", "b": lambda: "b"}, {"a": 2e12, "b": 2e12}, rounds=3)
    assert order == ["a", "b", "b", "a", "a", "b"]  # nobody always first
    assert r["a"]["ms"] == 2.0 and r["b"]["ms"] == 1.0  # medians, not means or the first
    assert r["a"]["tflops"] == 2e12 / 2e-3 / 1e12
    assert (r["b"]["tflops_min"], r["b"]["tflops_max"]) == (2e12 / 5e-3 / 1e12, 2e12 / 1e-3 / 1e12)
    assert r["a"]["sm_mhz"] is None  # no clock log: no clock claimed


def test_clock_log_window_takes_only_the_samples_inside():
    log = bench.ClockLog()
    now = time.monotonic()
    log.samples = [(now - 2, 1980.0, 100.0), (now, 1600.0, 300.0), (now + 0.5, 1700.0, 350.0),
                   (now + 3, 1500.0, 400.0)]
    w = log.window(now - 0.1, now + 1)
    assert w == {"sm_mhz": 1650.0, "power_w": 325.0, "clock_samples": 2}
    assert log.window(now + 10, now + 11)["sm_mhz"] is None


def test_attention_variant_names_parse_before_any_gpu_work():
    pytest.importorskip("triton")
    from instruments.bench_attention import main, parse_variant

    assert parse_variant("fa3") == ("fa3", None, None, None)
    assert parse_variant("fa3:s3") == ("fa3", 3, None, None)
    assert parse_variant("fa3+lane_sum+no_turns") == ("fa3", None, ("lane_sum", "no_turns"), None)
    assert parse_variant("fa3+rescale_early+plain") == ("fa3", None, ("rescale_early",), False)
    assert parse_variant("fa3+persistent") == ("fa3", None, None, True)
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
