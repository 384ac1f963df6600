# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 — The SM's units and their rates
#
# **Question.** An H100 does 989 TFLOP/s of dense fp16 matrix math. FlashAttention-2 gets about
# 35% of that on it, FlashAttention-3 about 67% (FA3 tab. 2). Where does the rest go?
#
# **The idea.** One Hopper SM is a handful of units that work at the same time, each at its own
# rate: the tensor cores (matrix products), the SFU (exponentials), the FMA pipe (everything else
# in floating point), and the TMA copy engine (tiles between memory and shared memory). A kernel
# is fast when the slowest unit it needs is always busy. This chapter puts numbers on each unit;
# the rest of the course is about keeping the tensor cores busy while the others work.
#
# Every number below comes from `sim/hardware.py`, which says where each one is from.

# %%
import matplotlib.pyplot as plt

from sim.hardware import H100

hw = H100
rows = [
    ("tensor cores (fp16 FLOP)", hw.tensor_flop_per_clk, "whitepaper: 989 TF = 132 · 4096 · 1.83 GHz"),
    ("SFU (exp2)", hw.sfu_exp_per_clk, "FA3 §3.1 fn. 5: 3.9 TF of exp"),
    ("FMA pipe (fp32 lanes)", hw.fma_lanes_per_clk, "whitepaper: 67 TF fp32"),
    ("shared memory (bytes)", hw.smem_bytes_per_clk, "whitepaper"),
    ("L2 → SM via TMA (bytes)", hw.l2_bytes_per_clk_per_sm, "calibrated, see hardware.py"),
]
print(f"{'unit':28s} {'per clk per SM':>15s}   source")
for name, rate, src in rows:
    print(f"{name:28s} {rate:15g}   {src}")
print(f"\n{hw.sms} SMs at {hw.clock_hz / 1e9:.2f} GHz: tensor peak {hw.peak_tflops:.0f} TFLOP/s")

# %% [markdown]
# ## One block of attention, one unit at a time
#
# FlashAttention walks K and V in blocks. For one block, one consumer warpgroup (64 rows of Q,
# head dim 128, a K/V block of 176 rows: FA3's d128 tile) does two matrix products and one
# softmax. How long would each take on its unit *alone*?
#
# * Q·Kᵀ and P·V: 2 · 64 · 176 · 128 FLOP each, at 4096 FLOP/clk.
# * softmax: 64 · 176 exps at 16/clk, plus a few FMA-pipe instructions per score.
# * loading K and V: 2 · 176 · 128 · 2 bytes through the copy engine.
#
# FA3 §3.1 makes the same count: at d 128 there are 512× more matmul FLOPs than exps, but the exp
# is 256× slower, so the exps take half as long as the matmuls.

# %%
rows_wg, block_n, d = 64, 176, 128
gemm_clk = 2 * (2 * rows_wg * block_n * d) / hw.tensor_flop_per_clk
exp_clk = rows_wg * block_n / hw.sfu_exp_per_clk
fma_clk = rows_wg * block_n * hw.softmax_fma_per_elem / hw.fma_lanes_per_clk
tma_clk = 2 * block_n * d * 2 / hw.l2_bytes_per_clk_per_sm
costs = {"Q·Kᵀ + P·V\n(tensor)": gemm_clk, "exp\n(SFU)": exp_clk, "scale, sum\n(FMA)": fma_clk,
         "load K, V\n(TMA)": tma_clk}
for k, v in costs.items():
    print(f"{k.replace(chr(10), ' '):28s} {v:7.0f} clk")
print(f"\nexp / matmul = {exp_clk / gemm_clk:.2f}   (FA3 §3.1: about 0.5)")

fig, ax = plt.subplots(figsize=(7, 2.8))
ax.barh(list(costs), list(costs.values()), color=["#1f77b4", "#d62728", "#ffbb78", "#98df8a"])
ax.invert_yaxis()
ax.set_xlabel("SM clock cycles for one 64×176 block (one warpgroup, units alone)")
ax.set_title("the tensor cores have the most to do — but not by much")
fig.tight_layout()

# %% [markdown]
# If the units only ever worked one after the other, one block would take the *sum* of these bars;
# if they overlapped perfectly, only the longest. The ratio of the two is the most overlap can
# buy — and it is large:

# %%
serial = gemm_clk + exp_clk + fma_clk
print(f"one after the other: {serial:.0f} clk → tensor busy {gemm_clk / serial:.0%} of the time")
print(f"perfect overlap:     {gemm_clk:.0f} clk → tensor busy 100% of the time")

# %% [markdown]
# ## The roofline: is attention limited by memory or by math?
#
# A kernel that does F FLOPs on B bytes from HBM can go no faster than `max(F / peak, B / bandwidth)`.
# Attention reads Q, K, V once and writes O once, but does 4·S·d FLOPs per row of Q: its
# arithmetic intensity grows with the sequence length, and past a few hundred rows it is far to the
# right of the ridge point. So on Hopper, attention is a **compute** problem: the gap to the roof is
# idle tensor-core time, not memory traffic. (FA2's 35% is not a memory limit.)

# %%
import numpy as np

peak = hw.peak_tflops
bw = hw.hbm_bytes_per_s / 1e12           # TB/s
ridge = peak / bw                        # FLOP/byte
x = np.logspace(0, 4, 200)
fig, ax = plt.subplots(figsize=(7, 3.6))
ax.loglog(x, np.minimum(peak, bw * x), color="black", label="roofline (H100 SXM)")
for seq, marker in ((512, "o"), (2048, "s"), (8448, "D")):
    flops = 4 * seq * seq * 128                      # per head
    nbytes = 4 * seq * 128 * 2                       # Q, K, V read, O written, fp16
    ax.scatter(flops / nbytes, min(peak, bw * flops / nbytes), marker=marker, zorder=3,
               label=f"attention d128, S {seq}")
ax.scatter(8192 ** 3 * 2 / (3 * 8192 ** 2 * 2), peak, marker="*", s=120, zorder=3,
           label="GEMM 8192³")
ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
ax.text(ridge * 1.1, 2, f"ridge {ridge:.0f} FLOP/B", fontsize=8)
ax.axhline(0.35 * peak, color="#d62728", linestyle="--", linewidth=1)
ax.text(1.2, 0.35 * peak * 1.1, "FA2 on H100 (~35%)", fontsize=8, color="#d62728")
ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
ax.set_ylabel("TFLOP/s")
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()

# %% [markdown]
# ## What the machine measured
#
# The rates above are datasheet figures. On our H200 (same SM as the H100, faster HBM) small
# Gluon kernels measured each unit on its own (`python -m instruments.bench micro`, the kernels are in
# `instruments/micro/`, the numbers in `results/h200-micro.json`, 2026-12-02): a stream of
# wgmmas, a chain of exp2s, a chain of FMAs, TMA copies one at a time (latency) and in a ring on
# every SM (bandwidth), an mbarrier hand-off between two warps, and the clock under a full tensor
# load. The `h200` preset of the model takes them; two it deliberately does not take, for the
# reason printed.

# %%
from course import measured

from fidelity.preset import MEASURED_FIELDS, NOT_TAKEN
from sim.hardware import H200, H200_DATASHEET

micro = measured("micro")
if micro is None:
    print("no microbenchmark results committed yet (results/h200-micro.json)")
else:
    got = micro["constants"]
    print(f"{'constant':26s} {'datasheet/model':>15s} {'measured':>10s}  used by the h200 preset")
    for key, field in MEASURED_FIELDS.items():
        was = getattr(H200_DATASHEET, field)
        now = got.get(key)
        use = "not measured" if now is None else (f"no: {NOT_TAKEN[key]}" if key in NOT_TAKEN else "yes")
        print(f"{key:26s} {was:15.4g} {now if now is None else f'{now:10.4g}':>10}  {use}")
    rows = {r["N"]: r for r in micro["rows"]
            if r["bench"] == "wgmma" and r.get("ok") and r["dtype"] == "float16"
            and r["warpgroups"] == 2 and r["wait"] == 1}
    lone = {r["N"]: r for r in micro["rows"]
            if r["bench"] == "wgmma" and r.get("ok") and r["dtype"] == "float16"
            and r["warpgroups"] == 1 and r["wait"] == 0}
    fig, ax = plt.subplots(figsize=(7, 3))
    ns = sorted(rows)
    ax.plot(ns, [n / 2 for n in ns], "k--", label="math alone: N/2 clk at 4096 FLOP/clk")
    ax.plot(ns, [rows[n]["clk_per_instr"] for n in ns], "o-", label="2 warpgroups, queued (wait 1)")
    ax.plot(sorted(lone), [lone[n]["clk_per_instr"] for n in sorted(lone)], "s-",
            label="1 warpgroup, each waited for (wait 0)")
    ax.set_xlabel("wgmma m64nNk16: N")
    ax.set_ylabel("SM clocks per instruction")
    ax.set_title("queued: the math alone (lines coincide); waited for: ~55 clk more", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    cap = H200.power_cap
    print(f"\nthe model's h200 preset boosts to {H200.clock_hz / 1e9:.2f} GHz; under the power cap "
          f"a bare wgmma stream holds {cap.clock_hz(1.0, 0.0, H200.clock_hz) / 1e9:.2f} GHz "
          f"(measured: {got['clock_hz_under_load'] / 1e9:.2f}), a GEMM moving 48 B/clk through "
          f"L2 {cap.clock_hz(0.97, 48.0, H200.clock_hz) / 1e9:.2f} GHz")

# %% [markdown]
# Three things the measurements say that the datasheet does not:
#
# * **A stream of queued wgmmas loses nothing**: 4096 FLOP/clk/SM at every N, exactly the
#   datasheet. On the `h200` preset the per-wgmma overhead is therefore 0; the `h100` preset keeps
#   the 34 clk fitted to the paper's tab. 2, which stands for the clock the paper's H100 really
#   ran at (the paper does not say; next point).
# * **Waiting for a wgmma** (`warpgroup_mma_wait(0)` right after it) exposes about 54 clk on top
#   of its math — the latency a softmax pays before it can read its scores.
# * **The clock is not a constant.** Our H200 sits at its 700 W power cap under any sustained
#   tensor load, and the clock it holds there depends on what it runs: 1.55 GHz for a bare wgmma
#   stream, 1.3 GHz for a GEMM that also pulls ~8 TB/s through L2, ~1.5-1.6 GHz for attention,
#   against 1.98 GHz when it starts cool (nvidia-smi reads high under the cap; these are cycle
#   counts over wall time). The model's `PowerCap` turns a kernel's activity into its clock —
#   one clock costs a fixed time plus a share for the tensor cores' busy fraction and for each
#   byte per clock through L2, a line `python -m fidelity.calibrate` fits through those measured clocks.
#   L2 itself does not slow down with the SM clock: its bandwidth is per second (9-10 TB/s).
#
# **Exercise** [`exercises/ch00_rates`](../exercises/ch00_rates/README.md): compute a wgmma group's and a
# softmax's cycles from these rates; the grader runs the model step by step against you.
