"""The hardware presets the model runs on: `h200` (what our H200 measured), `h100` (the same GH100
die on the paper's board: our measurements, plus what FA3 tab. 2 fits), `h200-datasheet`, `b200`
(a what-if). The machine they describe, `Hardware`, and
its power cap, `PowerCap`, are in `sim/machine.py`; every constant's source is named beside it.
"""
from __future__ import annotations

from dataclasses import replace

from .machine import KIB, Hardware, PowerCap

__all__ = ["B200", "BOARD", "GH100", "H100", "H100_STATIC_NS", "H200", "H200_DATASHEET",
           "H200_MEASURED", "H200_MICRO", "KIB",
           "PRESETS", "Hardware", "PowerCap", "get"]

# H200 SXM: the same GH100 die and compute (NVIDIA H200 datasheet), more and faster HBM3e.
# `h200-datasheet` is that, at the H100's 1830 MHz (our H200 reports 1980 MHz max, and read 1305-1575
# MHz right after long tensor-core runs: "clocks_after" in results/h200*.json). `h200` is the
# same machine with whatever the microbenchmarks measured on our H200 (`python -m instruments.bench
# micro` → results/h200-micro.json, "constants"), the datasheet where nothing was measured.
H200_DATASHEET = Hardware(name="h200-datasheet", hbm_bytes_per_s=4.8e12)   # 4.8 TB/s, datasheet
# What the unit microbenchmarks measured on our H200 (`python -m instruments.bench micro` →
# results/h200-micro.json, its "constants"; the TMA link rate is the slope of its L2 latency rows).
# Literal here so the model reads no file; tests/fidelity/test_measured_preset.py recomputes each
# from that file. The L2 bandwidth it also measured is not taken (see `l2_bytes_per_s` below).
H200_MICRO = {
    "tensor_flop_per_clk": 4095.9024330207253,   # a wgmma stream, both warpgroups
    "wgmma_latency_clk": 54.251917319207735,     # one m64nNk16 alone, issue to done
    "sfu_exp_per_clk": 15.963672016099903,       # MUFU.EX2 throughput, all four SM sub-partitions
    "fma_lanes_per_clk": 84.8899889311725,       # the softmax's FMUL/FADD mix
    "tma_latency_clk": 348.8817456593149,        # a copy that hits L2, intercept at 0 bytes
    "mbarrier_clk": 58.50022,                    # an arrive to the waiter's wake-up
    "tma_link_bytes_per_clk": 112.36002265588796,  # one SM's copies with L2 idle
}
# What our H200's traces and clock measurements set beyond the microbenchmarks' constants:
H200_MEASURED = {
    # a queue of wgmmas from two warpgroups costs 0.00 clk beyond its math at N 64/128/256
    # (h200-micro.json, wgmma rows "overhead_beyond_half_n"); the ws GEMM's traced k-step is
    # 1026 clk for 1024 of math
    "wgmma_overhead_clk": 0.0,
    # L2 per second: the TMA bandwidth microbenchmark reached 36 B/clk/SM at 1.98 GHz (9.2 TB/s),
    # our bandwidth-bound 128×128 pingpong GEMM 59 B/clk/SM at 1.34 GHz (10.4 TB/s; its k-step,
    # 32 KiB per 556.5 clk in a Proton trace of that GEMM, at the clock fidelity/calibrate.py reads
    # off the trace; results/lab-notebook.md keeps it): per clock the two disagree by 60 %, per
    # second by 12 %. We take the GEMM's, the pattern our kernels have.
    "l2_bytes_per_s": 10.4e12,
    # the traced producers' `TMA issue` scope: 62-64 clk per K or V block (attention ws,
    # ws_pingpong, fa3), 86 per A + B k-step (GEMM ws), 100 per three A boxes + B (pingpong
    # 192×128); the median, per load (traces/*.summary.json, producer "TMA issue" mean_clk)
    "tma_issue_clk": 64.0,
    # a wait that finds its phase complete still costs a probe: the traced consumers spend 85-166
    # clk in each `wait K` / `wait V` / `wait turn` scope although the producers wait 84-89 % of
    # the time for a free slot (the data is there first); part of that is the scope's own clock
    # reads, so we charge one hand-off, the mbarrier microbenchmark's 58.5 clk
    "mbarrier_probe_clk": 58.5,
    # a busy tensor core's cost to the softmax beside it, and the softmax's dependency tail:
    # chosen by `python -m fidelity.calibrate --softmax` (a grid of the two) for the smallest worst
    # error of the six attention kernels' cycles per K/V block (results/h200-stall.json: within
    # 9.4 %); FA3's own kernels on the same die, fitted with tab. 2 (`h100`), want 2.0 and 0.
    # The softmax microbenchmark (results/h200-softmax.json) then reads 1083 clk alone (measured
    # 851), two side by side 1371 (1228), beside a wgmma stream 1816 (1240): inside our kernels the
    # softmax is slower than the microbenchmark's beside the same work, and the model's stands
    # for that (tests/fidelity/test_softmax_measured.py holds the gap).
    "softmax_beside_mma": 2.0,
    "softmax_stall_per_elem": 0.01,
    # A GEMM's operand copies, issue to landed, from the traced refills of the GEMMs
    # (results/traces/gemm_ws_s2, gemm_ws_pingpong_s2, gemm_ws_pingpong_s3 .summary.json;
    # instruments.trace.hand_off_summary: the producer's `TMA issue` end to the consumer passing
    # `full`, medians over 54-133 k refills): ws s2 1507 clk for 48 KiB, pingpong s2 1426 and s3
    # 1383 for 40 KiB (an earlier trace of the same kernels: 1506, 1419, 1437) — the same at
    # every ring depth, so not a queue that load builds. Less the
    # bytes at the link rate and the consumer's wake-up (mbarrier_clk): 996-1014, against 349 for
    # an L2 hit and 884-950 for an idle HBM read (h200-micro.json). Nsight Compute has the GEMMs
    # reading 1.45-1.49 GB from DRAM, 5.5× A and B (h200-l2.json): the operands stream from HBM.
    "tma_hbm_latency_clk": 1003.0,
    # instruments/micro/issue.py (results/h200-issue.json): one warpgroup's first group of 4 or 8
    # wgmmas, unblocked — 12.4, 18.0 and 29.8 clk per SS instruction at N 64, 128, 256, 10.75
    # more per RS one (`issue.constants`, a least-squares fit within 8 clk of each row). Each
    # warpgroup issues on its own here; on the H200 a second one issuing at the same time slows
    # the first by 20-50 % (m64n128k16 ×4: 79 clk alone, 108 beside another), which the model
    # leaves out (tests/fidelity/test_wgmma_issue.py: its first group of two is early).
    "wgmma_issue_clk": 5.8,
    "wgmma_issue_clk_per_n": 0.098,
    "wgmma_issue_rs_clk": 10.75,
    # Nsight Compute's ledger of fa3's consumer warps (results/h200-stall.json at d 128,
    # results/h200-stall-dims.json at d 64 and d 256): their HGMMA samples per wgmma are the
    # microbenchmark's issue (17-22 clk),
    # and the uniform-datapath address work beside them ("other": 157 / 173 / 297 clk a block
    # for 12 / 16 / 20 wgmmas) another 13 clk a wgmma
    "wgmma_descriptor_clk": 13.0,
    # the same ledgers: once the queue is full, each issue returns when an instruction finishes,
    # with 7 in flight (issued less finished at the pipe's rate), for 1 or 2 warpgroups, SS or RS
    "wgmma_queue_depth": 7,
    # instruments/micro/launch.py (results/h200-launch.json): from a CTA's exit to the next one's
    # entry on the same SM, 368-446 clk (medians; the SMs at 1.98 GHz); 368 with a copy in the
    # CTA, the row most like our kernels' CTAs
    "cta_launch_clk": 368.0,
    # results/h200-launch.json, "ncu": each launch of that benchmark under Nsight Compute, its
    # busiest SM's cycles less its 9 CTAs and the 8 turnovers between them: 2922, 3162, 3531
    # clk at 1.96 GHz (1.5-1.8 µs; the longest with a cold copy in each CTA)
    "kernel_launch_s": 1.6e-6,
    # `python -m fidelity.calibrate --align`: the factor whose model puts each of the nine
    # alignment pairs (results/h200-align.json: three kernels on three shapes, rows 16 bytes off
    # 128 or on it) nearest the measured slowdown (1.12-1.46): within 12.9 % of each ratio. A row
    # that straddles two 128-byte lines costs more than its 5 of 4 sectors (×1.25) would say.
    "tma_misaligned_factor": 1.55,
    # the boost clock, the ceiling under the power cap: nvidia-smi clocks.max, "1980 MHz" in
    # every results file's environment. (The microbenchmark's clock under a bare wgmma stream,
    # which `with_measurements` takes as clock_hz, is one of the points PowerCap is fitted to.)
    "clock_hz": 1.98e9,
    # at the 700 W limit (nvidia-smi power.limit): the plane `python -m fidelity.calibrate` fits
    # through twelve clocks measured under load (a wgmma stream, six traced attention kernels,
    # five traced GEMMs — the s2/s3 rings, the in-line attention kernels, fa3 and overlap with the
    # schedule fence, fa3 at d 256: "clocks_after" in results/h200*.json and the Proton traces in
    # results/traces/; within 3.6 % of each, d 256 the farthest). Without the exps term,
    # the s2 GEMMs sat 6 % under the line: the softmax burns power.
    "power_cap": PowerCap(base_ns=0.4105, tensor_ns=0.2384, l2_ns_per_byte=0.002570,
                          exp_ns=0.00883),
}


H200 = H200_DATASHEET.with_(name="h200", **H200_MICRO, **H200_MEASURED)

# The paper's H100 SXM5 is the same GH100 die on another board (H100 whitepaper; NVIDIA H200
# datasheet). What our H200 measured of the die — the units' rates, the wgmma queue with no
# overhead beyond its math, the issue and descriptor work, TMA and mbarrier latencies, L2, the
# launch — serves it as measured. Not the die's: the clock (FA3 app. C.1 locks the H100 at
# 1830 MHz, the ceiling here; ours boosts to 1980), HBM (3.35 TB/s, the default), and how much
# power the board burns whatever runs — HBM3 80 GB against HBM3e 141 GB — so of the power cap's
# plane only the static term moves: each unit's energy per clock is the die's.
# `softmax_beside_mma` and `softmax_stall_per_elem` are properties of a kernel's softmax code, so
# h100's are FA3's own. Fitted together to FA3 tab. 2 (`python -m fidelity.calibrate --tab2`: the
# smallest worst error over its three numbers, 4.0 %): the static term 0.08 ns lower (the paper's
# board holds fa3 at ~1.57 GHz where ours holds 1.40), FA3's softmax beside a busy tensor core 2.0
# — the value our kernels' cycles chose independently — and no dependency tail.
BOARD = ("clock_hz", "power_cap", "softmax_beside_mma", "softmax_stall_per_elem")
GH100 = {k: v for k, v in {**H200_MICRO, **H200_MEASURED}.items() if k not in BOARD}
H100_STATIC_NS = -0.08          # the tab. 2 fit: h100's power cap base_ns less h200's
_DIE_CAP = H200_MEASURED["power_cap"]
H100 = Hardware(name="h100", **GH100, softmax_beside_mma=2.0, softmax_stall_per_elem=0.0,
                power_cap=replace(_DIE_CAP, base_ns=_DIE_CAP.base_ns + H100_STATIC_NS))

# Blackwell for chapter 06 (a model, not a measurement: no Blackwell here; docs/constants.md
# names each source). FA4 §2.2: 8192 dense fp16/bf16 FLOP/clk/SM, MUFU still 16 exp/clk/SM; 148
# SMs, and 2.25 PF dense bf16 (B200 datasheet) = 148 · 8192 · 1.856 GHz, the clock the preset runs
# at (its loss under the 1000 W cap is not modelled: no B200 clock was measured); 8 TB/s HBM3e.
# The MMA costs its math alone, as our H200 measured for wgmma (`H200_MEASURED`): the datasheet
# presets' 34 clk per wgmma stands for Hopper's clock under its power cap, which this preset
# does not model. Tensor memory: 512 columns × 128 lanes × 32 bit = 256 KiB per SM (PTX ISA,
# "Tensor Memory"; FA4 §2.2). Its bandwidth is not published: we assume a sub-partition's warp
# moves one 32-bit column of its 32 lanes a clock, as it reads a register operand — 4 × 32 × 4 B
# = 512 B/clk per SM (chapter 06 shows what the prediction does when it is halved or doubled).
# Packed FP32 add/mul/fma (add/sub/mul/fma .f32x2, PTX ISA 8.6, sm_100): two elements a slot.
# A CTA pair's hand-offs cross the SM-to-SM network: Hopper's distributed shared memory answers a
# load in about 180 clk where the SM's own answers in 29 (arXiv 2402.13499; no Blackwell figure is
# public); a remote arrive goes one way, so a crossing adds half the difference.
SM_TO_SM_LOAD_CLK, SMEM_LOAD_CLK = 180.0, 29.0
B200 = Hardware(name="b200", sms=148, tensor_flop_per_clk=8192, clock_hz=1.856e9,
                hbm_bytes_per_s=8.0e12, wgmma_overhead_clk=0.0,
                tmem_columns=512, tmem_bytes_per_clk=512.0, fp32_pack=2,
                sm_pair_hop_clk=(SM_TO_SM_LOAD_CLK - SMEM_LOAD_CLK) / 2)

PRESETS: dict[str, Hardware] = {h.name: h for h in (H100, H200, H200_DATASHEET, B200)}


def get(name: str) -> Hardware:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown hardware {name!r}: expected one of {sorted(PRESETS)}") from None
