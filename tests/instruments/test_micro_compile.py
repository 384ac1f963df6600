"""CPU-only checks of the microbenchmarks (instruments/micro): each kernel compiles for sm_90a without
a GPU, and its PTX (and, where the wheel's cuobjdump is present, its SASS) holds the instruction
it claims to time, as many times per loop body as the rate arithmetic assumes. Also: the model
constants are derived correctly from rows (synthetic rows here; nothing is measured on CPU)."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from instruments.micro import (
    beside,
    clock,
    common,
    issue,
    launch,
    mbar,
    operands,
    pair,
    rescale,
    run,
    softmax,
    tma,
    units,
    wgmma,
)
from kernels.cuda import compile as cc

ONE_CTA = int(common.ONE_CTA_SMEM)  # > half an SM's shared memory: one CTA per SM


def count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


def sass(kernel) -> str:
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump for SASS")
    return cc.sass_of_cubin(kernel.asm["cubin"])


def timers(ptx: str) -> None:
    assert ".target sm_90a" in ptx
    assert count(ptx, r"mov\.u64 %rd\d+, %clock64;") == 2, "clock64 read before and after"


@pytest.mark.parametrize("N,wgs,wait,dtype", [(64, 1, 1, "fp16"), (128, 2, 1, "bf16"),
                                              (256, 2, 1, "fp16"), (256, 1, 0, "fp16")])
def test_wgmma_rate(N, wgs, wait, dtype):
    k = wgmma.compile_sm90(N, wgs, wait, dtype, unroll=8)
    ptx = k.asm["ptx"]
    timers(ptx)
    kind = "f16" if dtype == "fp16" else "bf16"
    assert count(ptx, rf"wgmma\.mma_async\.sync\.aligned\.m64n{N}k16\.f32\.{kind}\.{kind}") == 8
    assert count(ptx, rf"wgmma\.wait_group\.sync\.aligned {wait};") >= 8
    assert k.metadata.num_warps == 4 * wgs
    assert k.metadata.shared >= ONE_CTA + (64 * wgs + N) * 16 * 2, "hog + A + B, not aliased"
    if N == 256 and wgs == 2:
        s = sass(k)
        assert count(s, rf"HGMMA\.64x{N}x16\.F32") == 8, "8 back-to-back wgmmas per loop body"


@pytest.mark.parametrize("N,KG,G,mode,wgs", [(128, 16, 24, 0, 1), (128, 16, 24, 2, 2),
                                              (128, 128, 6, 1, 1), (256, 64, 6, 0, 2)])
def test_wgmma_issue(N, KG, G, mode, wgs):
    """Every group issued async with a clock read after it and no wait in between: one
    wait_group 0 at the end; RS groups take A from registers. In SASS (where cuobjdump is
    here) a clock read sits between every group's HGMMAs and the next group's."""
    k = issue.compile_sm90(N=N, KG=KG, G=G, mode=mode, wgs=wgs)
    ptx = k.asm["ptx"]
    per = KG // 16
    assert count(ptx, rf"wgmma\.mma_async\.sync\.aligned\.m64n{N}k16\.f32\.f16\.f16") == G * per
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned \d+;") == 1
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 0;") == 1
    assert count(ptx, r"mov\.u64 %rd\d+, %clock64;") == G + 2
    rs_groups = {0: 0, 1: G, 2: G // 2}[mode]
    # an RS wgmma names A as a brace list of registers, an SS one as a 64-bit descriptor
    assert count(ptx, r"wgmma\.mma_async[^;]*\{[^}]*\},\s*\{") == rs_groups * per
    assert k.metadata.num_warps == 4 * wgs
    tool = cc.find_cuobjdump()
    if tool is not None:
        order = re.findall(r"HGMMA|SR_CLOCKLO|WARPGROUP\.DEPBAR", sass(k))
        assert order.count("HGMMA") == G * per and order.count("SR_CLOCKLO") == G + 2
        groups = "".join("H" if o == "HGMMA" else "c" if o == "SR_CLOCKLO" else "W" for o in order)
        assert groups == "c" + ("H" * per + "c") * G + "Wc", groups


@pytest.mark.parametrize("N", operands.NS)
@pytest.mark.parametrize("walk", [0, 1])
@pytest.mark.parametrize("tma_on", [0, 1])
def test_wgmma_operands(N, walk, tma_on):
    """16 SS m64nNk16 per group, then one wait; walking: 16 different descriptor pairs (the
    k-slices), same slice: one pair; the TMA stream's copies (2 in the prologue, 1 refill) only
    with TMA on, and the landing clock with it; the ring allocated either way (> 114 KiB: one CTA
    per SM). In SASS: the clock, 16 HGMMAs, the wait, the clock; no spills."""
    k = operands.compile_sm90(N, walk, tma_on)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx
    assert count(ptx, r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16") == operands.INSTR
    assert count(ptx, rf"wgmma\.mma_async\.sync\.aligned\.m64n{N}k16\.f32\.f16\.f16") == 16
    assert count(ptx, r"wgmma\.mma_async[^;]*\{[^}]*\},\s*\{") == 0, "SS: no A in registers"
    descs = re.findall(r"wgmma\.mma_async[^;]*\},\s*(%rd\d+),\s*(%rd\d+)", ptx)
    assert len(set(descs)) == (16 if walk else 1), descs
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 0;") == 1
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") == 3 * tma_on
    assert count(ptx, r"mbarrier\.try_wait\.parity") == 2 * tma_on  # consumer's start, ring
    assert count(ptx, r"mov\.u64 %rd\d+, %clock64;") == 2 + tma_on
    assert k.metadata.num_warps == 8  # the consumer warpgroup + the worker warp, padded
    ring = operands.SLOTS * operands.BOX_BYTES
    tiles = (operands.BM + N) * operands.KD * 2
    assert k.metadata.shared >= max(tiles + ring, 114 * 1024 + 1), "A + B + ring; one CTA per SM"
    if cc.find_cuobjdump() is not None:
        s = sass(k)
        assert count(s, rf"HGMMA\.64x{N}x16\.F32") == 16
        assert count(s, r"\bSTL\b") == 0, "no register spills"
        order = "".join({"HGMMA": "H", "SR_CLOCKLO": "c", "WARPGROUP.DEPBAR": "W"}[o] for o in
                        re.findall(r"HGMMA|SR_CLOCKLO|WARPGROUP\.DEPBAR", s))
        assert "c" + "H" * 16 + "Wc" in order, order


@pytest.mark.parametrize("K,mode", [(128, 0), (128, 1), (64, 2)])
def test_softmax_beside(K, mode):
    """Per round: K/16 wgmmas (none alone; RS ones name A as registers), one exp2 per score
    element of the thread's share (64 × 128 over 128 threads) plus the two rows' rescale, no
    spills."""
    k = beside.compile_sm90(K, mode)
    ptx = k.asm["ptx"]
    n = 0 if mode == 0 else K // 16
    assert count(ptx, r"wgmma\.mma_async\.sync\.aligned\.m64n128k16") == n
    assert count(ptx, r"wgmma\.mma_async[^;]*\{[^}]*\},\s*\{") == (n if mode == 1 else 0)
    assert count(ptx, r"ex2\.approx") == 64 + 2
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 0;") == (1 if mode else 0)
    if cc.find_cuobjdump() is not None:
        s = sass(k)
        assert count(s, r"\bSTL\b") == 0, "no register spills"
        assert count(s, r"MUFU\.EX2") == 66


@pytest.mark.parametrize("warpgroups,beside,releases", [(1, 0, 0), (2, 0, 0), (1, 1, 0), (1, 2, 0),
                                                       (1, 0, 3)])
def test_attention_softmax(warpgroups, beside, releases):
    """The kernels' own softmax per round: an exp2 per score element of the thread's share plus
    the two rows' rescale factors, P packed to fp16; a second partition doing the same (its
    pack dropped: dead) or issuing wgmma groups; each arrive after a warpgroup barrier."""
    k = softmax.compile_sm90(warpgroups, beside, releases)
    ptx = k.asm["ptx"]
    assert count(ptx, r"ex2\.approx") == 66 * (2 if beside == 1 else 1)
    assert count(ptx, r"wgmma\.mma_async") == (8 if beside == 2 else 0)
    assert count(ptx, r"mbarrier\.arrive") == releases
    if beside:
        assert count(ptx, r"setmaxnreg") >= 2
    if cc.find_cuobjdump() is not None:
        s = sass(k)
        assert count(s, r"\bSTL\b") == 0, "no register spills"
        assert count(s, r"F2FP") == 32
        assert count(s, r"SYNCS\.ARRIVE") == releases


@pytest.mark.parametrize("turn", [False, True])
def test_attention_softmax_wgmma_side(turn):
    """Beside the softmax, the wgmma partition's rounds: a clock read before the first wgmma
    of a round and one after its last, before the wait — so the issue time is what it
    measures — with 8 SS (Q·Kᵀ), and with ``turn`` 8 RS (P·V) right after them."""
    k = softmax.compile_sm90(1, 2, 0, turn)
    ptx = k.asm["ptx"]
    assert count(ptx, r"wgmma\.mma_async") == (16 if turn else 8)
    assert count(ptx, r"wgmma\.mma_async[^;]*\{[^}]*\},\s*\{") == (8 if turn else 0), "RS: A in registers"
    if cc.find_cuobjdump() is not None:
        order = "".join({"HGMMA": "H", "SR_CLOCKLO": "c", "WARPGROUP.DEPBAR": "W"}[o] for o in
                        re.findall(r"HGMMA|SR_CLOCKLO|WARPGROUP\.DEPBAR", sass(k)))
        per = "c" + "H" * (16 if turn else 8) + "cW"
        assert per in order and order.count("H") % len(per.strip("cW")) == 0, order
        assert order.count("W") == order.count(per), "every round's wait after its two clocks"


@pytest.mark.parametrize("which,op", [("exp2", r"ex2\.approx\.ftz\.f32"), ("fma", r"fma\.rn\.f32")])
def test_unit_rate(which, op):
    k = units.compile_sm90(which, vec=8, num_warps=8, unroll=16)
    ptx = k.asm["ptx"]
    timers(ptx)
    assert count(ptx, op) == 8 * 16, "VEC x UNROLL instructions per loop body"
    assert k.metadata.shared >= ONE_CTA, "one CTA per SM"
    s = sass(k)
    assert count(s, r"MUFU\.EX2" if which == "exp2" else r"FFMA") == 8 * 16


@pytest.mark.parametrize("bench,has,hasnt", [
    ("clock", r"wgmma\.mma_async\.sync\.aligned\.m64n256k16", r"cp\.async\.bulk|ex2\."),
    ("clock_l2", r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", r"wgmma|ex2\."),
    ("clock_hbm", r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", r"wgmma|ex2\."),
    ("clock_exp", r"ex2\.approx\.ftz\.f32", r"wgmma|cp\.async|mbarrier")])
def test_clock_stream_kernels(bench, has, hasnt):
    """Each clock stream's kernel, as it runs it, loads the unit its name says and no other the
    power cap's plane counts: the L2 stream has TMA copies and no wgmma, the exp stream exps
    and no wgmma or copy. Each reads %clock64 and %globaltimer before and after its loop (the
    clock is the one over the other) and holds 128 KiB (one CTA per SM)."""
    k = clock.compile_sm90(bench)
    ptx = k.asm["ptx"]
    timers(ptx)
    assert count(ptx, r"mov\.u64 %rd\d+, %globaltimer;") == 2
    assert count(ptx, has) > 0 and count(ptx, hasnt) == 0
    assert k.metadata.shared >= ONE_CTA


def test_clock_stream_lengths():
    """Sized for SECONDS at the ceiling clock and the short runs' rates: ~2 s there, longer (never
    shorter) as the limit pulls the clock down to the wgmma stream's 1.55 GHz; the L2 stream's
    copy index stays inside the kernel's int32 on 132 SMs."""
    runs = {"clock_l2": (clock.l2_iters(clock.SECONDS),
                         128 * tma.BC * 2 / clock.L2_BYTES_PER_CLK),
            "clock_hbm": (clock.l2_iters(clock.SECONDS, clock.HBM_BYTES_PER_CLK),
                          128 * tma.BC * 2 / clock.HBM_BYTES_PER_CLK),
            "clock_exp": (clock.exp_iters(clock.SECONDS), 16 * 8 * 32 * 8 / clock.EXP_PER_CLK)}
    for bench, (iters, clk) in runs.items():
        at_ceiling = iters * clk / clock.CEILING_HZ
        assert at_ceiling == pytest.approx(clock.SECONDS, rel=1e-3), bench
        assert clock.SECONDS < iters * clk / 1.55e9 < 1.3 * clock.SECONDS, bench
    assert clock.l2_iters(2.0) * 128 * 128 / 36.0 / 1.98e9 == pytest.approx(2.0, rel=1e-3)
    assert (clock.l2_iters(clock.SECONDS) + clock.L2_DEPTH) * 132 < 2**31
    assert clock.exp_iters(2.0) == pytest.approx(2 * clock.exp_iters(1.0), abs=1)


def test_smi_log_parsing():
    text = ("1545, 699.12, 51, 0x0000000000000004\n[N/A], 1.0, 40, 0x0\n1530, 700.40, 53, 0x0"
            "000000000000004\n1980, 2")
    assert clock.parse_smi(text) == [(1545e6, 699.12, 51.0, "0x0000000000000004"),
                                     (1530e6, 700.40, 53.0, "0x0000000000000004")]
    f = clock.smi_fields(clock.parse_smi(text))
    assert f["clock_hz_smi_median"] == 1537.5e6 and f["power_w_smi_max"] == 700.40
    assert f["temperature_c_smi_max"] == 53.0
    assert f["clock_event_reasons"] == ["0x0000000000000004"]
    none = clock.smi_fields([])
    assert none["clock_hz_smi_median"] is None and none["clock_hz_smi_samples"] == []


def test_smi_log_samples_while_the_block_runs(monkeypatch, tmp_path):
    """The sampling loop against a stand-in nvidia-smi on PATH: samples come back, and stop
    with the block."""
    import os
    import time

    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho '1545, 699.5, 50, 0x0000000000000004'\nsleep 0.02\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(common, "DEVICE", "cuda")
    with clock.smi_log() as samples:
        time.sleep(0.3)
    n = len(samples)
    assert 3 <= n and set(samples) == {(1545e6, 699.5, 50.0, "0x0000000000000004")}
    time.sleep(0.1)
    assert len(samples) == n


@pytest.mark.parametrize("BR", [8, 256])
def test_tma_latency(BR):
    ptx = tma.compile_sm90("latency", BR=BR, iters=64).asm["ptx"]
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") == 1
    assert count(ptx, r"mbarrier\.arrive\.expect_tx") == 1
    assert count(ptx, r"mbarrier\.try_wait\.parity") == 1
    assert count(ptx, r"%clock64") == 2  # around the copy, inside the loop


@pytest.mark.parametrize("depth", [1, 4])
def test_tma_bandwidth(depth):
    k = tma.compile_sm90("bandwidth", BR=128, depth=depth)
    ptx = k.asm["ptx"]
    timers(ptx)
    # the prologue's DEPTH copies (unrolled) + the refill in the loop
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") == depth + 1
    assert count(ptx, r"mbarrier\.init\.shared") == depth
    assert k.metadata.shared >= ONE_CTA + depth * 128 * tma.BC * 2, "hog + ring, not aliased"


@pytest.mark.parametrize("load,num_warps", [(False, 1), (False, 4), (True, 1), (True, 4)])
def test_cta_launch(load, num_warps):
    """Entry, after-the-load and exit: a clock64 and a globaltimer read each (the load pair only
    with LOAD), the SM id once; one TMA copy waited for with LOAD and none without (else the
    launch-only rows would time a copy too); the 128 KiB hog, plus the tile with LOAD."""
    k = launch.compile_sm90(load, num_warps=num_warps)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx
    reads = 3 if load else 2
    assert count(ptx, r"mov\.u64 %rd\d+, %clock64;") == reads
    assert count(ptx, r"mov\.u64 %rd\d+, %globaltimer;") == reads
    assert count(ptx, r"mov\.u32 %r\d+, %smid;") == 1
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") == int(load)
    assert count(ptx, r"mbarrier\.arrive\.expect_tx") == int(load)
    assert count(ptx, r"mbarrier\.try_wait\.parity") == int(load)
    assert k.metadata.num_warps == num_warps
    tile = launch.BOX[0] * launch.BOX[1] * 2
    assert k.metadata.shared >= ONE_CTA + (tile if load else 0), "hog + tile, not aliased"


@pytest.mark.parametrize("ping_warpgroup", [False, True])
def test_mbarrier_pingpong(ping_warpgroup):
    k = mbar.compile_sm90(ping_warpgroup)
    ptx = k.asm["ptx"]
    timers(ptx)
    assert count(ptx, r"mbarrier\.try_wait\.parity") == 2  # one per side
    assert count(ptx, r"mbarrier\.arrive\.shared::cta\.b64") == 2
    assert count(ptx, r"mbarrier\.init\.shared") == 2
    assert k.metadata.num_warps == 8  # default warpgroup + ping + pong, padded to warpgroups
    assert re.search(r"\.maxnreg\s+128", ptx), "setmaxnreg needs a register cap at entry"
    # a warp's hand-off has no CTA barrier in its loop; a warpgroup's has one per arrive/wait
    assert count(ptx, r"bar\.sync") == (3 if ping_warpgroup else 1)


def test_constants_from_rows():
    """derive_constants on made-up rows: the wgmma fit recovers a known peak and overhead."""
    P, o = 4096.0, 30.0
    rows = [{"bench": "wgmma", "ok": True, "dtype": "float16", "warpgroups": 2, "wait": 1, "N": N,
             "clk_per_instr": 2048 * N / P + o} for N in (64, 128, 256)]
    rows += [{"bench": "wgmma", "ok": False, "dtype": "float16", "warpgroups": 2, "wait": 1,
              "N": 64, "clk_per_instr": 1.0}]  # a failed check never counts
    rows += [{"bench": "wgmma", "ok": True, "dtype": "float16", "warpgroups": 1, "wait": 0, "N": N,
              "clk_per_instr": N / 2 + lat} for N, lat in ((64, 50.0), (128, 54.0), (256, 70.0))]
    rows += [{"bench": "exp2", "ok": True, "per_clk_per_sm": 15.9},
             {"bench": "fma", "ok": True, "per_clk_per_sm": 127.0},
             {"bench": "tma_latency", "ok": True, "mode": "l2", "box_bytes": 1024,
              "latency_clk_median": 500 + 1024 / 100},
             {"bench": "tma_latency", "ok": True, "mode": "l2", "box_bytes": 16384,
              "latency_clk_median": 500 + 16384 / 100},
             {"bench": "tma_bandwidth", "ok": True, "mode": "l2", "bytes_per_clk_per_sm": 40.0},
             {"bench": "tma_bandwidth", "ok": True, "mode": "l2", "bytes_per_clk_per_sm": 60.0},
             {"bench": "tma_bandwidth", "ok": True, "mode": "hbm", "bytes_per_clk_per_sm": 90.0},
             {"bench": "mbarrier", "ok": True, "ping": "warpgroup", "clk_per_handoff": 99.0},
             {"bench": "mbarrier", "ok": True, "ping": "warp", "clk_per_handoff": 55.0},
             {"bench": "clock", "ok": True, "clock_hz_globaltimer": 1.75e9}]
    c = run.derive_constants(rows)
    assert set(c) == {"clock_hz_under_load", "tensor_flop_per_clk", "wgmma_latency_clk",
                      "sfu_exp_per_clk", "fma_lanes_per_clk", "tma_latency_clk",
                      "l2_bytes_per_clk_per_sm", "mbarrier_clk"}
    assert c["tensor_flop_per_clk"] == pytest.approx(P)
    assert c["wgmma_latency_clk"] == 54.0  # the median over N of the exposed latency
    assert c["tma_latency_clk"] == pytest.approx(500)
    assert c["l2_bytes_per_clk_per_sm"] == 60.0
    assert (c["sfu_exp_per_clk"], c["fma_lanes_per_clk"], c["mbarrier_clk"]) == (15.9, 127.0, 55.0)
    assert c["clock_hz_under_load"] == 1.75e9
    assert run.derive_constants([]) == {}  # left out, never null: sim keeps its datasheet value
    run.print_table([], c)


def test_bench_micro_needs_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the real run is test_micro_gpu's business")
    from instruments import bench

    assert bench.main(["micro"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# The host side of every benchmark, run on CPU with each kernel replaced by a torch fake that
# computes what the kernel should and reports made-up cycle counts. It catches bugs in the
# checks, the bookkeeping, the file and the table -- code that otherwise runs only on the GPU.
# The fake numbers never leave tmp_path.
# --------------------------------------------------------------------------------------------
CLK = 1.5e9  # the fakes' clock: cycles / ns


class Fake:
    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        return lambda *a, **kw: self.fn(grid[0], *a, **kw)


def _stats(stats, cycles):
    g = stats.shape[0]
    stats[:, 0] = 1000
    stats[:, 1] = 1000 + int(cycles)
    stats[:, 2] = 5000
    stats[:, 3] = 5000 + int(cycles / CLK * 1e9)
    stats[:, 4] = torch.arange(g)


def fake_wgmma(grid, a, b, out, stats, iters, N, UNROLL, WAIT, num_warps):
    out.copy_((iters * UNROLL) * (a.float() @ b.float()))
    _stats(stats, iters * UNROLL * (num_warps // 4) * (N / 2 + (30 if WAIT else 55)))


def fake_exp2(grid, x, a, out, stats, iters, VEC, UNROLL, num_warps):
    for _ in range(min(iters * UNROLL, 64)):
        x = torch.exp2(a - x)
    out.copy_(x)
    _stats(stats, iters * UNROLL * VEC * 32 * num_warps / 16)


def fake_fma(grid, x, a, b, out, stats, iters, VEC, UNROLL, num_warps):
    for _ in range(min(iters * UNROLL, 64)):
        x = x * a + b
    out.copy_(x)
    _stats(stats, iters * UNROLL * VEC * 32 * num_warps / 128)


def fake_tma_latency(grid, desc, out, lat, n_use, step, ITERS, num_warps):
    BR = desc.block_shape[0]
    last = ((ITERS - 1) * step) % n_use
    out.copy_(desc.base[last * BR:(last + 1) * BR])
    lat.fill_(600)


def fake_tma_bandwidth(grid, desc, out, stats, n_tiles, iters, DEPTH, num_warps):
    BR = desc.block_shape[0]
    tiles = desc.base.view(n_tiles, BR, -1)
    for pid in range(grid):
        for c in range(iters, iters + DEPTH):
            out[pid, c % DEPTH] = tiles[(pid + c * grid) % n_tiles]
    _stats(stats, (iters + DEPTH) * BR * 128 / (20 * DEPTH))


def fake_mbar(grid, stats, counts, iters, PING_WARPGROUP, num_warps, maxnreg):
    counts.fill_(iters)
    _stats(stats, 2 * iters * (90 if PING_WARPGROUP else 60))


@pytest.fixture
def on_cpu(monkeypatch):
    from instruments.micro import common as cm

    monkeypatch.setattr(cm, "DEVICE", "cpu")
    monkeypatch.setattr(cm, "sm_count", lambda: 8)
    monkeypatch.setattr(tma, "SOURCE_BYTES", {"l2": 1 << 20, "hbm": 4 << 20})
    for mod, name, fn in ((wgmma, "wgmma_rate_kernel", fake_wgmma),
                          (units, "exp2_rate_kernel", fake_exp2),
                          (units, "fma_rate_kernel", fake_fma),
                          (tma, "tma_latency_kernel", fake_tma_latency),
                          (tma, "tma_bandwidth_kernel", fake_tma_bandwidth),
                          (mbar, "mbarrier_pingpong_kernel", fake_mbar)):
        monkeypatch.setattr(mod, name, Fake(fn))


def test_host_side_with_fake_kernels(on_cpu, tmp_path, capsys):
    import json

    from instruments import bench

    rows, constants = run.bench_micro(seed=0, quick=True)
    assert rows and all(r["ok"] for r in rows), [r for r in not_ok(rows)]
    # the fakes' made-up rates come back out through the same arithmetic the GPU run uses
    assert constants["tensor_flop_per_clk"] == pytest.approx(4096, rel=1e-3)
    assert constants["wgmma_latency_clk"] == pytest.approx(55, rel=1e-2)
    assert constants["sfu_exp_per_clk"] == pytest.approx(16, rel=1e-3)
    assert constants["fma_lanes_per_clk"] == pytest.approx(128, rel=1e-3)
    assert constants["tma_latency_clk"] == pytest.approx(600)
    assert constants["mbarrier_clk"] == pytest.approx(60)
    assert constants["l2_bytes_per_clk_per_sm"] == pytest.approx(80, rel=1e-2)
    assert constants["clock_hz_under_load"] == pytest.approx(CLK, rel=1e-3)
    env = {"gpu": "NVIDIA H200 (fake)"}
    (path,) = bench.write_micro(env, rows, constants, [tmp_path])
    assert path.name == "h200-micro.json"
    data = json.loads(path.read_text())
    assert set(data) == {"micro"} and set(data["micro"]) == {"environment", "constants", "rows"}
    # what sim/hardware.py does with the file: every key known, every value a float
    from fidelity.preset import with_measurements
    from sim.hardware import H200_DATASHEET

    hw = with_measurements(H200_DATASHEET, path, "h200")
    assert hw.clock_hz == pytest.approx(CLK, rel=1e-3) and hw.mbarrier_clk == pytest.approx(60)
    run.print_table(rows, constants)
    out = capsys.readouterr().out
    assert "model constants" in out and "wgmma" in out and "!" not in out.split("model")[0][-200:]


def test_clock_streams_host_side(on_cpu, monkeypatch, tmp_path):
    """The clock streams on the fakes: each row carries the activity the fake ran (the TMA fake
    lands 20 B/clk per copy in flight, the exp2 fake 16 exps/clk) and its clock, over ~2 s; in
    the file `fidelity.calibrate` reads, they become clock points of no family. An exp kernel
    that computes the wrong function fails its check, and calibrate takes no point
    from it."""
    import json

    from fidelity.calibrate import stream_points

    rows = clock.rows(torch.Generator(), seconds=2.0)
    assert [r["bench"] for r in rows] == ["clock", "clock_l2", "clock_exp", "clock_hbm"]
    assert all(r["ok"] for r in rows), not_ok(rows)
    _, l2, exp, hbm = rows
    assert hbm["l2_bytes_per_clk_per_sm"] == pytest.approx(40, rel=1e-3)
    assert f"({tma.SOURCE_BYTES['hbm'] >> 20} MiB)" in hbm["load"]  # the source it read
    assert l2["l2_bytes_per_clk_per_sm"] == pytest.approx(40, rel=1e-3)
    assert exp["exps_per_clk_per_sm"] == pytest.approx(16, rel=1e-3)
    assert l2["exps_per_clk_per_sm"] == exp["l2_bytes_per_clk_per_sm"] == 0.0
    assert l2["tensor_util"] == exp["tensor_util"] == 0.0
    for r in rows:
        assert r["clock_hz_globaltimer"] == pytest.approx(CLK, rel=1e-3), r["bench"]
        assert "MHz over" in clock.line(r)
    # sized for 2 s at 1.98 GHz, 36 B/clk and 16 exp/clk; the fakes run at 1.5 GHz, 40 B/clk
    # and 16 exp/clk: 2.38 s and 2.64 s (the wgmma row's seconds are CUDA events: host time here)
    assert l2["seconds"] == pytest.approx(2.0 * 1.98 / 1.5 * 36 / 40, rel=1e-3)
    assert exp["seconds"] == pytest.approx(2.0 * 1.98 / 1.5, rel=1e-3)
    assert hbm["seconds"] == pytest.approx(2.0 * 1.98 / 1.5 * 18 / 40, rel=1e-3)
    path = tmp_path / "h200-clock.json"
    path.write_text(json.dumps(rows))
    pts = stream_points(path)  # the HBM stream is a read-out: the plane has no DRAM term
    assert [(p.name, p.tensor_util, p.workload) for p in pts] == [("L2 stream", 0.0, "micro"),
                                                                  ("exp2 stream", 0.0, "micro")]
    assert (pts[0].l2_bytes_per_clk, pts[1].exps_per_clk) == (l2["l2_bytes_per_clk_per_sm"],
                                                              exp["exps_per_clk_per_sm"])

    def natural_exp(grid, x, a, out, stats, iters, VEC, UNROLL, num_warps):
        # (not a kernel that skips a few steps: the chain contracts to a fixed point, so the
        # check cannot see those; the count per loop body is test_unit_rate's, on the SASS)
        fake_exp2(grid, x, a, out, stats, iters, VEC, UNROLL, num_warps)
        for _ in range(64):
            x = torch.exp(a - x)
        out.copy_(x)

    monkeypatch.setattr(units, "exp2_rate_kernel", Fake(natural_exp))
    bad = clock.clock_exp(torch.Generator(), seconds=2.0)
    assert not bad["ok"] and bad["clock_hz_globaltimer"] is None and "no timed run" in clock.line(bad)
    path.write_text(json.dumps([l2, bad]))
    assert [p.name for p in stream_points(path)] == ["L2 stream"]


def test_a_wrong_kernel_fails_its_check(on_cpu, monkeypatch):
    """A kernel that skips work is caught by the check, and its rates stay out of the row."""
    def lazy_wgmma(grid, a, b, out, stats, iters, N, UNROLL, WAIT, num_warps):
        fake_wgmma(grid, a, b, out, stats, max(iters - 1, 0), N, UNROLL, WAIT, num_warps)

    def short_fma(grid, x, a, b, out, stats, iters, VEC, UNROLL, num_warps):
        fake_fma(grid, x, a, b, out, stats, iters, VEC, UNROLL - 1, num_warps)

    monkeypatch.setattr(wgmma, "wgmma_rate_kernel", Fake(lazy_wgmma))
    monkeypatch.setattr(units, "fma_rate_kernel", Fake(short_fma))
    gen = torch.Generator()
    r = wgmma.run(128, 2, 1, torch.float16, 100, gen)
    assert not r["ok"] and "flop_per_clk_per_sm" not in r
    r = units.run("fma", 100, gen)
    assert not r["ok"] and "per_clk_per_sm" not in r
    assert run.derive_constants([r]) == {}


def not_ok(rows):
    return [r for r in rows if not r.get("ok")]


def fake_cta_launch(grid, desc, out, stats, LOAD, num_warps, gap=300, cta=150, first=1200,
                    later=900, tile_of=lambda pid: pid):
    """8 SMs, CTA pid on SM pid % 8 in wave pid // 8, one after another: ``gap`` clk between
    them, ``cta`` clk of their own plus the copy (``first`` in the first wave, ``later`` after)."""
    BR, BCOL = desc.block_shape
    tiles = desc.base.view(-1, BR, BCOL)
    sms = 8
    clk = [7_000 * (sm + 1) for sm in range(sms)]  # each SM's own counter
    for pid in range(grid):
        sm, wave = pid % sms, pid // sms
        load = (first if wave == 0 else later) if LOAD else 0
        t0 = clk[sm] + (gap if wave else 0)
        ns = [int(t / CLK * 1e9) for t in (t0, t0 + load, t0 + load + cta)]
        stats[pid] = torch.tensor([t0, ns[0], t0 + load, ns[1], t0 + load + cta, ns[2], sm, pid])
        clk[sm] = t0 + load + cta
        if LOAD:
            t = tiles[tile_of(pid)]
            out[pid] = torch.cat([t[:launch.CHECK], t[-launch.CHECK:]])


def test_cta_launch_host_side(on_cpu, monkeypatch):
    """The per-SM bookkeeping gives back the fake's gap, clock and copy latencies; a CTA that
    copied the wrong tile, or never wrote its stats, makes the row not ok."""
    monkeypatch.setattr(launch, "SOURCE_BYTES", 4 << 20)
    monkeypatch.setattr(launch, "FLUSH_BYTES", 1 << 20)
    monkeypatch.setattr(launch, "cta_launch_kernel", Fake(fake_cta_launch))
    gen = torch.Generator()
    r = launch.run(True, 3, gen)
    assert r["ok"] and r["bitwise"] and r["written"] and r["one_cta_per_sm"], r
    assert (r["grid"], r["sms"], r["ctas_per_sm_min"], r["ctas_per_sm_max"]) == (24, 8, 3, 3)
    assert r["gap_clk_median"] == r["gap_clk_p10"] == r["gap_clk_p90"] == 300
    assert r["gap_ns_median"] == pytest.approx(200, abs=1)   # 300 clk at 1.5 GHz
    assert r["clock_hz"] == pytest.approx(CLK, rel=1e-2)
    assert (r["first_wave_load_clk_median"], r["later_load_clk_median"]) == (1200, 900)
    assert r["cta_clk_median"] == 150 + 900
    r = launch.run(False, 3, gen)
    assert r["ok"] and r["bitwise"] is None and r["first_wave_load_clk_median"] is None, r
    assert r["cta_clk_median"] == 150 and r["gap_clk_median"] == 300
    assert "gap 300 clk" in launch.line(r)

    def wrong_tile(grid, *a, **kw):
        fake_cta_launch(grid, *a, **kw, tile_of=lambda pid: pid + 1)

    monkeypatch.setattr(launch, "cta_launch_kernel", Fake(wrong_tile))
    assert not launch.run(True, 3, gen)["ok"]

    def overlapping(grid, *a, **kw):  # two CTAs at once on an SM: not a turnover
        fake_cta_launch(grid, *a, **kw, gap=-40)

    monkeypatch.setattr(launch, "cta_launch_kernel", Fake(overlapping))
    r = launch.run(False, 3, gen)
    assert not r["ok"] and not r["one_cta_per_sm"] and r["gap_clk_min"] == -40

    def one_missing(grid, desc, out, stats, LOAD, num_warps):
        fake_cta_launch(grid, desc, out, stats, LOAD, num_warps)
        stats[5] = -1

    monkeypatch.setattr(launch, "cta_launch_kernel", Fake(one_missing))
    r = launch.run(False, 3, gen)
    assert not r["ok"] and not r["written"]


def fake_operands(grid, a, b, desc, out, stats, lands, tiles, iters, copies, n_tiles, N, WALK,
                  TMA, num_warps, maxnreg, groups_done=None, tma_rate=36.0, stream_clk=None):
    """The accumulator the kernel should leave, ``N/2 + 8`` clk per instruction, and with TMA a
    stream of copies landing every ``BOX_BYTES / tma_rate`` clk from before the window on."""
    n = iters if groups_done is None else groups_done
    out.copy_(operands.reference(a, b, WALK, n).float())
    cycles = iters * operands.INSTR * (N / 2 + 8)
    _stats(stats, cycles)  # the window is clk (1000, 1000 + cycles]
    if TMA:
        step = operands.BOX_BYTES / tma_rate
        lands.copy_((900 + step * torch.arange(copies, dtype=torch.float64)).long().expand_as(lands))
        if stream_clk is not None:  # a stream that stops early
            lands.clamp_(max=1000 + stream_clk)
        t = desc.base.view(n_tiles, *operands.BOX)
        for pid in range(grid):
            for c in range(copies - operands.SLOTS, copies):
                tile = t[(pid + c * grid) % n_tiles]
                tiles[pid, c % operands.SLOTS] = torch.cat([tile[:operands.CHECK],
                                                            tile[-operands.CHECK:]])


def test_operands_host_side(on_cpu, monkeypatch):
    """The rows give back the fake's clk per instruction and TMA rate in the window; a wrong
    accumulator, or a stream that ends inside the window, makes a row not ok."""
    monkeypatch.setattr(operands, "SOURCE_BYTES", 1 << 20)
    monkeypatch.setattr(operands, "operands_kernel", Fake(fake_operands))
    gen = torch.Generator()
    for N, walk, tma_on in ((64, 0, 0), (256, 1, 1)):
        r = operands.run(N, walk, tma_on, gen, iters=50)
        assert r["ok"] and r["rel_err"] < 1e-6, r
        assert r["clk_per_instr"] == pytest.approx(N / 2 + 8, rel=1e-3)
        assert r["operand_bytes_per_clk"] == pytest.approx((2048 + 32 * N) / (N / 2 + 8), rel=1e-3)
        assert r["beyond_math_per_group"] == pytest.approx(16 * 8, rel=1e-2)
        assert (r["tma_bitwise"] is None) == (not tma_on)
        if tma_on:
            assert r["tma_covers_window"] and r["tma_bytes_per_clk"] == pytest.approx(36, rel=0.02)
            assert "B/clk in window" in operands.line(r)

    def one_group_short(grid, *a, **kw):
        fake_operands(grid, *a, **kw, groups_done=a[7] - 1)

    monkeypatch.setattr(operands, "operands_kernel", Fake(one_group_short))
    assert not operands.run(64, 1, 0, gen, iters=50)["ok"]

    def short_stream(grid, *a, **kw):
        fake_operands(grid, *a, **kw, stream_clk=500)

    monkeypatch.setattr(operands, "operands_kernel", Fake(short_stream))
    r = operands.run(64, 1, 1, gen, iters=50)
    assert not r["ok"] and not r["tma_covers_window"], r


SASS_ORDER = {"HGMMA": "H", "SR_CLOCKLO": "c", "WARPGROUP.DEPBAR": "W", "FMUL": "m"}


def runs(order: str) -> str:
    """``ccHHHH…`` as ``ccH16…``: a run of more than 3 of a letter by its count."""
    return re.sub(r"(.)\1{3,}", lambda m: f"{m.group(1)}{len(m.group(0))}", order)


@pytest.mark.parametrize("mode", list(rescale.MODES))
def test_rescale_beside_qk(mode):
    """Q·Kᵀ as fa3 issues it at d 256 (16 SS m64n64k16 walking 16 k-slices, one wait), then O's
    128 FMULs a thread; each mode leaves out only its own part. In SASS the loop body is the
    clocks' order: clock, 16 HGMMA, clock, 128 FMUL, clock, the wait, clock — no FMUL among
    the wgmmas, none after the wait; no spills; one CTA per SM."""
    k = rescale.compile_sm90(mode)
    ptx = k.asm["ptx"]
    qk, fmul = mode != rescale.FMUL_ALONE, mode != rescale.QK_ALONE
    assert ".target sm_90a" in ptx
    assert count(ptx, r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16") == 16 * qk
    descs = re.findall(r"wgmma\.mma_async[^;]*\},\s*(%rd\d+),\s*(%rd\d+)", ptx)
    assert len(set(descs)) == 16 * qk, "each instruction its own k-slice of Q and K"
    assert count(ptx, r"mul\.f32") == rescale.FMULS_PER_THREAD * fmul
    assert count(ptx, r"mov\.u64 %rd\d+, %clock64;") == 6   # around the loop, 4 in it
    assert k.metadata.num_warps == 4
    assert k.metadata.shared >= ONE_CTA
    s = sass(k)
    assert count(s, r"\bSTL\b") == 0, "no register spills"
    order = runs("".join(SASS_ORDER[o] for o in re.findall("|".join(
        re.escape(n) for n in SASS_ORDER), s)))
    body = "c" + "H16" * qk + "c" + "m128" * fmul + "c" + "W" * qk + "c"
    assert order == "c" + body + "c", order


def fake_rescale(grid, q, k, o, alpha, s_out, o_out, spans, stats, iters, MODE, num_warps,
                 fmul_clk=300.0, wrong_o=False):
    """What the kernel should leave, with made-up spans: 25 clk a wgmma issued, ``fmul_clk``
    for the FMULs (half of it without the wgmmas), the wait for the rest of 16·32 + 60 clk."""
    s_ref, o_ref = rescale.reference(q, k, o, alpha, MODE, iters)
    s_out.copy_(s_ref.float())
    o_out.copy_(o_ref.float() * (1.001 if wrong_o else 1.0))
    qk = MODE != rescale.FMUL_ALONE
    issue = 16 * 25.0 if qk else 2.0
    f = (fmul_clk if qk else fmul_clk / 2) if MODE != rescale.QK_ALONE else 2.0
    wait = max(16 * 32 + 60 - f, 2.0) if qk else 2.0
    spans.copy_(torch.tensor([issue, f, wait]).mul(iters).long().expand_as(spans))
    _stats(stats, iters * (issue + f + wait))


def test_rescale_host_side(on_cpu, monkeypatch):
    """The rows give back the fake's spans per iteration, the FMULs' slowdown beside Q·Kᵀ and
    lanes per clk; an O that is not O₀·alphaⁿ makes its row not ok."""
    monkeypatch.setattr(rescale, "rescale_kernel", Fake(fake_rescale))
    rows = rescale.rows(torch.Generator())
    assert all(r["ok"] for r in rows), not_ok(rows)
    by = {r["mode"]: r for r in rows}
    beside = by[rescale.MODES[rescale.FMUL_AFTER_QK]]
    assert beside["issue_clk"] == pytest.approx(400) and beside["fmul_clk"] == pytest.approx(300)
    assert beside["fmul_slowdown"] == pytest.approx(2.0)
    assert beside["fmul_lanes_per_clk"] == pytest.approx(64 * 256 / 300)
    assert beside["group_delay_clk"] == pytest.approx(400 + 300 + 272 - (400 + 2 + 570))
    assert "FMULs x2.00 of alone" in rescale.line(beside)

    monkeypatch.setattr(rescale, "rescale_kernel",
                        Fake(lambda *a, **kw: fake_rescale(*a, **kw, wrong_o=True)))
    r = rescale.run(rescale.FMUL_AFTER_QK, torch.Generator())
    assert not r["ok"] and r["o_rel_err"] > 1e-5 and "fmul_clk" not in r


# --- the SM pair's crossing (pair.cu, CUDA C++) -----------------------------------------------
# the send of each mode in SASS: the CTA's own arrive, the shared::cluster arrive (a remote
# reduction on the barrier), the asynchronous remote store
LOCAL_ARRIVE, CLUSTER_ARRIVE, REMOTE_STORE = (r"SYNCS\.ARRIVE\.TRANS64\.A1T0",
                                              r"SYNCS\.ARRIVE\.TRANS64\.RED", r"\bSTAS\b")
PAIR_SENDS = {"local": LOCAL_ARRIVE, "cluster_self": CLUSTER_ARRIVE,
              "remote_arrive": CLUSTER_ARRIVE, "remote_store": REMOTE_STORE}


def pair_loops() -> dict[str, str]:
    """Each mode's SASS between its two clock reads (ping's timed loop)."""
    if cc.find_nvcc() is None:
        pytest.skip("no nvcc (the project's cuda extras)")
    cubin, report = pair.compile_sm90()
    assert report.count("0 bytes spill stores") == len(pair.MODES), "no spills in any mode"
    out = {}
    for name, text in cc.sass_by_function(cubin).items():
        mode = pair.MODES[int(re.search(r"sm_pair_kernelILi(\d)E", name).group(1))]
        clocks = [m.start() for m in re.finditer(r"SR_CLOCKLO", text)]
        assert len(clocks) == 2, (mode, len(clocks))
        out[mode] = text[clocks[0]:clocks[1]]
    return out


def test_pair_sends_as_each_mode_claims():
    """Between ping's clock reads: each mode's own send and no other mode's (local: the CTA's own
    arrive; cluster_self and remote_arrive: the shared::cluster arrive; remote_store: STAS),
    the waits, and no memory barrier (a cluster-scope release would put a GPU-wide MEMBAR
    before every arrive)."""
    loops = pair_loops()
    assert set(loops) == set(pair.MODES)
    for mode, body in loops.items():
        for send in {LOCAL_ARRIVE, CLUSTER_ARRIVE, REMOTE_STORE}:
            assert (count(body, send) > 0) == (send == PAIR_SENDS[mode]), (mode, send)
        assert count(body, r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT") >= 1, mode
        assert count(body, r"MEMBAR") == 0, mode


def fake_pair_stats(clusters, iters, mode, rt=(120.0, 270.0), sms=None, done=None, wrong=0):
    """Stats as pair.cu writes them: ping (rank 0) at even rows with its clocks, pong at odd
    rows; round trip rt[0] in the one-SM modes, rt[1] across the pair (rt[1] + 40 for pairs
    not on one TPC)."""
    sms = sms or list(range(2 * clusters))
    s = torch.full((2 * clusters, pair.STATS), -1, dtype=torch.int64)
    for c in range(clusters):
        a, b = sms[2 * c], sms[2 * c + 1]
        r = rt[0] if mode not in pair.TWO_SMS else rt[1] + (0 if pair.same_tpc(a, b) else 40)
        cyc = int(r * iters)
        s[2 * c, :4] = torch.tensor([1000, 1000 + cyc, 5000, 5000 + int(cyc / CLK * 1e9)])
        s[2 * c, 4:6] = torch.tensor([a, 0])
        s[2 * c + 1, 4:6] = torch.tensor([b, 1])
        n = (2 * iters, 0) if mode not in pair.TWO_SMS else (iters, iters)
        s[2 * c, 6], s[2 * c + 1, 6] = done or n
    s[:, 7] = 0
    s[0, 7] = wrong
    return s


def test_pair_rows_and_crossing(on_cpu, monkeypatch):
    """The host arithmetic: the round trip per mode back from the stats, the pairs on one TPC
    read apart, the crossing per hand-off (remote − local) / 2; a short count, a wrong value or
    two CTAs on one SM make a row not ok."""
    shuffled = [0, 1, 2, 5, 4, 3, 6, 7]         # pairs (0,1), (2,5), (4,3), (6,7): 2 on one TPC

    def fake(stats, iters, mode, clusters):
        stats.copy_(fake_pair_stats(clusters, iters, mode, sms=shuffled))

    monkeypatch.setattr(pair, "pingpong", fake)
    rows = pair.rows(None)
    assert all(r["ok"] for r in rows), not_ok(rows)
    by = {r.get("mode", r["bench"]): r for r in rows}
    assert by["local"]["clk_per_round_trip"] == pytest.approx(120)
    assert by["remote_arrive"]["same_tpc"] == 2
    assert by["remote_arrive"]["clk_per_round_trip_same_tpc"] == pytest.approx(270)
    assert by["remote_arrive"]["clk_per_round_trip_other_pairs"] == pytest.approx(310)
    cross = by["sm_pair_crossing"]
    assert cross["remote_arrive_vs_local_clk"] == pytest.approx((by["remote_arrive"]["clk_per_round_trip"] - 120) / 2)
    assert "crossing per hand-off" in pair.line(cross)

    bad = {"done": (5, 5), "wrong": 3, "sms": [0, 1, 2, 3, 4, 5, 6, 6]}
    for key, value in bad.items():
        stats = fake_pair_stats(4, 10, "remote_store", **{key: value})
        assert not pair.read(stats, 10, "remote_store")["ok"], key
    with pytest.raises(ValueError, match="expected one of"):
        pair.run("remote")
