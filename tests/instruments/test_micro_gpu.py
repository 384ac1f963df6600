"""GPU checks of the microbenchmarks (instruments/micro): each one's correctness check passes and its
rate lies in a physically sane range for an H100/H200 SM. Ranges are wide on purpose: they catch a
broken benchmark (a rate 10x off, a wrong count), not a slow card. Skipped without a Hopper GPU.
Short loops: the whole file takes a few seconds of GPU time."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


@pytest.fixture
def gen():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    g = torch.Generator(device="cuda")
    g.manual_seed(1234)
    return g


@pytest.mark.parametrize("N,wgs,dtype", [(64, 1, torch.float16), (256, 2, torch.float16),
                                         (128, 2, torch.bfloat16)])
def test_wgmma_rate(gen, N, wgs, dtype):
    from instruments.micro import wgmma

    r = wgmma.run(N, wgs, 1, dtype, iters=2000, gen=gen)
    assert r["rel_err"] < 1e-3, r
    assert r["ok"], r
    # no SM does more than 4096 dense FLOP/clk (a little slack for clock64 granularity)
    assert 300 < r["flop_per_clk_per_sm"] <= 4096 * 1.02, r
    assert -2 < r["overhead_beyond_half_n"] < 400, r


def test_wgmma_latency_mode_is_slower(gen):
    from instruments.micro import wgmma

    w1 = wgmma.run(128, 1, 1, torch.float16, iters=1000, gen=gen)
    w0 = wgmma.run(128, 1, 0, torch.float16, iters=1000, gen=gen)
    assert w1["ok"] and w0["ok"], (w1, w0)
    assert w0["clk_per_instr"] >= 0.95 * w1["clk_per_instr"]


@pytest.mark.parametrize("mode", [0, 1])
def test_wgmma_issue_queue(gen, mode):
    """24 single m64n128k16 issued back to back: the first few return in tens of clocks each,
    later ones only as fast as the pipe finishes them (~64 clk), and all are done in about
    24 instructions' math."""
    from instruments.micro import issue

    r = issue.run(128, 16, 24, mode, 1, torch.float16, gen)
    assert r["ok"], r
    c = r["clk_after_issue"][0]
    assert all(b > a for a, b in zip(c, c[1:])), c
    first, last = c[3] / 4, (c[-1] - c[-6]) / 5
    assert 5 < first < 60, c                    # issue alone: not the pipe's rate
    assert 50 < last < 160, c                   # blocked: about the pipe's 64
    assert 24 * 55 < r["clk_after_wait"][0] < 24 * 120, r


@pytest.mark.parametrize("N,walk,tma_on", [(64, 0, 0), (64, 1, 1), (256, 1, 1)])
def test_wgmma_operands(gen, N, walk, tma_on):
    """16 SS m64nNk16 a group, then a wait: the accumulator checks out, no instruction beats its
    math (N/2 clk), and with TMA the stream ran through the whole window at an L2-like rate."""
    from instruments.micro import operands

    r = operands.run(N, walk, tma_on, gen, iters=100)
    assert r["ok"], r
    assert r["clk_per_instr"] >= 0.9 * N / 2, r
    assert r["clk_per_instr"] < 4 * N / 2 + 100, r
    if tma_on:
        assert r["tma_covers_window"] and 2 < r["tma_bytes_per_clk"] < 512, r


def test_exp2_rate(gen):
    from instruments.micro import units

    r = units.run("exp2", iters=200, gen=gen)
    assert r["rel_err"] < 1e-5 and r["ok"], r
    assert 4 < r["per_clk_per_sm"] < 40, r  # datasheet 16 MUFU ex2 per clk per SM


def test_fma_rate(gen):
    from instruments.micro import units

    r = units.run("fma", iters=1000, gen=gen)
    assert r["rel_err"] < 1e-5 and r["ok"], r
    assert 32 < r["per_clk_per_sm"] <= 128 * 1.02, r  # datasheet 128 FP32 lanes per SM


@pytest.mark.parametrize("mode", ["l2", "hbm"])
def test_tma_latency(gen, mode):
    from instruments.micro import tma

    r = tma.run_latency(64, mode, gen, iters=128)
    assert r["ok"], r
    assert 100 < r["latency_clk_median"] < 20_000, r


@pytest.mark.parametrize("depth", [1, 4])
def test_tma_bandwidth(gen, depth):
    from instruments.micro import tma

    r = tma.run_bandwidth(128, depth, "l2", gen, iters=500)
    assert r["ok"], r
    assert 2 < r["bytes_per_clk_per_sm"] < 512, r


def test_tma_more_in_flight_is_not_slower(gen):
    from instruments.micro import tma

    one = tma.run_bandwidth(128, 1, "l2", gen, iters=500)
    four = tma.run_bandwidth(128, 4, "l2", gen, iters=500)
    assert one["ok"] and four["ok"]
    assert four["bytes_per_clk_per_sm"] > 0.9 * one["bytes_per_clk_per_sm"], (one, four)


@pytest.mark.parametrize("load", [False, True])
def test_cta_launch(gen, load):
    """3 waves of one CTA per SM: every SM ran 2 or more (an SM whose CTAs ran short takes an
    extra one: 2-4 on the H200), one after another with a gap between them (``ok`` holds every
    gap > 0), and a CTA's first copy is a cold read (an L2 hit is ~350-490 clk on the H200, HBM
    ~950-1250)."""
    from instruments.micro import launch

    r = launch.run(load, 3, gen)
    assert r["ok"] and r["one_cta_per_sm"], r
    assert r["sms"] == torch.cuda.get_device_properties(0).multi_processor_count, r
    assert r["ctas_per_sm_min"] >= 2, r
    assert r["gap_clk_median"] > 0, r
    if load:
        assert r["bitwise"], r
        assert r["first_wave_load_clk_median"] > 300 and r["later_load_clk_median"] > 300, r


def test_mbarrier_round_trip(gen):
    from instruments.micro import mbar

    warp = mbar.run(iters=20_000)
    wg = mbar.run(iters=20_000, ping_warpgroup=True)
    assert warp["ok"] and wg["ok"], (warp, wg)
    assert 5 < warp["clk_per_handoff"] < 5_000, warp
    assert 5 < wg["clk_per_handoff"] < 5_000, wg


def test_clock_under_load(gen):
    from instruments.micro import run

    r = run.clock_under_load(gen, None, seconds=0.2)
    assert r["ok"], r
    assert 0.5e9 < r["clock_hz_globaltimer"] < 2.2e9, r   # H100/H200 max boost 1980 MHz
    assert abs(r["clock_hz_events"] / r["clock_hz_globaltimer"] - 1) < 0.1, r


@pytest.mark.parametrize("bench", ["clock_l2", "clock_exp", "clock_hbm"])
def test_clock_streams(gen, bench):
    """A short run of each stream (0.2 s: not sustained, so not a point of the plane): its check
    passes, its rate is the short benchmark's (L2 ~36 B/clk, exp2 ~16 /clk per SM, HBM 3.35-4.8
    TB/s over 132 SMs ~13-18 B/clk, wide ranges) and its clock is a clock."""
    from instruments.micro import clock

    r = getattr(clock, bench)(gen, seconds=0.2)
    assert r["ok"], r
    assert 0.5e9 < r["clock_hz_globaltimer"] < 2.2e9, r
    assert 0.1 < r["seconds"] < 0.5, r
    if bench == "clock_l2":
        assert 10 < r["l2_bytes_per_clk_per_sm"] < 100 and r["exps_per_clk_per_sm"] == 0, r
    elif bench == "clock_hbm":
        assert 5 < r["l2_bytes_per_clk_per_sm"] < 30 and r["exps_per_clk_per_sm"] == 0, r
    else:
        assert 8 < r["exps_per_clk_per_sm"] < 33 and r["l2_bytes_per_clk_per_sm"] == 0, r


def test_bench_micro_quick_writes_the_file(gen, tmp_path):
    """The whole suite in its quick form; the file has the shape sim reads."""
    import json

    from instruments import bench

    rc = bench.main(["micro", "--quick", "--out", str(tmp_path)])
    files = list(tmp_path.glob("*-micro.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())["micro"]
    assert set(data) == {"environment", "constants", "rows"}
    assert set(data["constants"]) == {"clock_hz_under_load", "tensor_flop_per_clk",
                                      "wgmma_latency_clk", "sfu_exp_per_clk", "fma_lanes_per_clk",
                                      "tma_latency_clk", "l2_bytes_per_clk_per_sm", "mbarrier_clk"}
    bad = [r for r in data["rows"] if not r.get("ok")]
    assert rc == 0 and not bad, bad
    assert all(isinstance(v, float) for v in data["constants"].values()), data["constants"]


def test_rescale_beside_qk(gen):
    """Each mode's check passes; 128 FMULs a thread take at least 128 clk (one a clock per
    sub-partition) and at most a few thousand; Q·Kᵀ takes at least its 16 × 32 clk of math."""
    from instruments.micro import rescale

    for mode in rescale.MODES:
        r = rescale.run(mode, gen, iters=50)
        assert r["ok"], r
        if mode != rescale.QK_ALONE:
            assert 120 < r["fmul_clk"] < 4000, r
        if mode != rescale.FMUL_ALONE:
            assert 16 * 32 * 0.95 < r["group_clk"] < 8000, r


@pytest.mark.parametrize("mode", ["local", "remote_arrive", "remote_store"])
def test_sm_pair_round_trip(gen, mode):
    """Every round trip completes (a lost phase hangs: run under `timeout`), each CTA has an SM
    of its own, the values arrive; a round trip takes tens to thousands of clk."""
    from instruments.micro import pair

    r = pair.run(mode, iters=2000)
    assert r["ok"], {k: v for k, v in r.items() if k != "smid_pairs"}
    assert 20 < r["clk_per_round_trip"] < 5000, r["clk_per_round_trip"]
