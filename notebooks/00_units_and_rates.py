# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 — The SM's units and their rates
#
# **Question.** An H100's tensor cores have a datasheet peak of dense fp16 matrix math.
# FlashAttention-2 reaches about a third of it, FlashAttention-3 about two thirds (the paper's
# figures are printed below). Where does the rest go?
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

from course import md
from sim.hardware import H100, H200_DATASHEET
from sim.paper import FA2_OF_PEAK, TAB2, TAB2_REPORTED
from sim.plot import style, unit_style

hw = H100
# the model's preset of the H100's SM from documents (the H200 has the same SM)
datasheet = H200_DATASHEET
rows = [   # (unit, attribute, who gives the h200-datasheet value, where)
    ("tensor cores (fp16 FLOP)", "tensor_flop_per_clk", "NVIDIA",
     "whitepaper: 989 TF = 132·4096·1.83 GHz"),
    ("SFU (exp2)", "sfu_exp_per_clk", "the FA3 paper", "FA3 §3.1 fn. 5: 3.9 TF of exp"),
    ("FMA pipe (fp32 lanes)", "fma_lanes_per_clk", "NVIDIA", "whitepaper: 128 fp32 lanes an SM"),
    ("shared memory (bytes)", "smem_bytes_per_clk", "NVIDIA", "whitepaper"),
    ("L2 → SM via TMA (bytes)", "l2_bytes_per_clk_per_sm", "calibrated",
     "no document: calibrated (sim/machine.py)"),
]
print(f"{'per clock, per SM':24s} {'h200-datasheet':>14s} {'h100 preset':>11s}   "
      "source of the h200-datasheet value")
for name, attr, _, src in rows:
    print(f"{name:24s} {getattr(datasheet, attr):14.4g} {getattr(hw, attr):11.4g}   {src}")
print(f"\n{hw.sms} SMs at {hw.clock_hz / 1e9:.2f} GHz: tensor peak {hw.peak_tflops:.0f} TFLOP/s")
differ = [name.split(" (")[0] for name, attr, _, _ in rows
          if abs(getattr(hw, attr) / getattr(datasheet, attr) - 1) > 0.01]
def listed(names):
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


by = {who: listed([name.split(" (")[0] for name, _, w, _ in rows if w == who])
      for who in ("NVIDIA", "the FA3 paper", "calibrated")}
md(f"The *h200-datasheet* column is the model's preset of that name: the SM as published, each "
   f"value from the source beside it — NVIDIA's documents for the {by['NVIDIA']}, the FA3 paper "
   f"for the {by['the FA3 paper']}, and for {by['calibrated']}, which no document gives, a value "
   f"set above what cuBLAS's and CUTLASS's GEMMs pull (`sim/machine.py` says which). The *h100 "
   f"preset* column is what the model computes with: those values where our H200 measured the same, our H200's measurements of the same SM "
   f"where it did not ({listed(differ)}: the last section of this chapter shows the "
   f"measurements).")
md(f"The H100's dense fp16 peak is {hw.peak_tflops:.0f} TFLOP/s. FlashAttention-2 reaches about "
   f"{FA2_OF_PEAK:.0%} of it (FA3 §1), FlashAttention-3 {TAB2_REPORTED['fa3']} TFLOP/s, "
   f"{TAB2_REPORTED['fa3'] / hw.peak_tflops:.0%} (FA3 tab. 2, d {TAB2['headdim']}, "
   f"S {TAB2['seqlen']}).")

# %% [markdown]
# ## One block of attention, one unit at a time
#
# FlashAttention walks K and V in blocks. FA3's d 128 tile gives a CTA 128 rows of Q, split
# between two consumer warpgroups of 64 rows each, and K/V blocks of 176 rows. One K/V block is
# loaded once and serves both warpgroups: each does two matrix products and one softmax with it.
# How long would the whole block's work take on each unit *alone*?
#
# * Q·Kᵀ and P·V: 2 · 64 · 176 · 128 FLOP each, per warpgroup, at 4096 FLOP/clk (both
#   warpgroups share the SM's tensor cores).
# * softmax: 64 · 176 exps per warpgroup at 16 per clock for the SM, plus a few FMA-pipe
#   instructions per score.
# * loading K and V: 2 · 176 · 128 · 2 bytes, once for both warpgroups, through the copy engine.

# %%
rows_wg, block_n, d, warpgroups = 64, 176, 128, 2
gemm_clk = warpgroups * 2 * (2 * rows_wg * block_n * d) / hw.tensor_flop_per_clk
exp_clk = warpgroups * rows_wg * block_n / hw.sfu_exp_per_clk
fma_clk = warpgroups * rows_wg * block_n * hw.softmax_fma_per_elem / hw.fma_lanes_per_clk
tma_clk = 2 * block_n * d * 2 / hw.l2_bytes_per_clk_per_sm
costs = {"Q·Kᵀ + P·V\n(tensor)": gemm_clk, "exp\n(SFU)": exp_clk, "scale, sum\n(FMA)": fma_clk,
         "load K, V\n(TMA)": tma_clk}
for k, v in costs.items():
    print(f"{k.replace(chr(10), ' '):28s} {v:7.0f} clk")
print(f"\nexp / matmul = {exp_clk / gemm_clk:.2f}   (FA3 §3.1: about 0.5)")

unit_names = dict(zip(costs, ("the tensor cores", "the SFU", "the FMA pipe", "the TMA")))
busiest = unit_names[max(costs, key=costs.get)]
fig, ax = plt.subplots(figsize=(7, 2.8))
for (name, clk), unit in zip(costs.items(), ("tensor", "sfu", "fma", "tma")):
    ax.barh(name, clk, **unit_style(unit))     # each unit in the colour of its work in the timelines
ax.invert_yaxis()
ax.set_xlabel(f"SM clock cycles for one {block_n}-row K/V block "
              f"({warpgroups} warpgroups × {rows_wg} rows of Q, units alone)")
ax.set_title(f"one K/V block: {busiest} busiest; the matmuls take {gemm_clk / exp_clk:.1f}× "
             f"the exps, {gemm_clk / tma_clk:.1f}× the load", fontsize=10)
fig.tight_layout()
flop_per_exp = 2 * 2 * d                                  # Q·Kᵀ and P·V: 2·d FLOP each per score
exp_slower = hw.tensor_flop_per_clk / hw.sfu_exp_per_clk                 # the h100 preset's rates
paper_slower = datasheet.tensor_flop_per_clk / datasheet.sfu_exp_per_clk  # the published ones
md(f"Per K/V block {busiest} have the most to do: {gemm_clk:.0f} clk for the block's two matrix products "
   f"in both warpgroups, against {exp_clk:.0f} for the exps and {tma_clk:.0f} for the one load of "
   f"K and V that serves both. FA3 §3.1 makes the same count: at d {d} there are "
   f"{flop_per_exp}× more matmul FLOPs than exps, but an exp is {paper_slower:.0f}× slower "
   f"({datasheet.tensor_flop_per_clk} FLOP against {datasheet.sfu_exp_per_clk} exps a clock, the "
   f"table's *h200-datasheet* column; {exp_slower:.0f}× at the *h100 preset*'s measured rates, "
   f"which these bars use), so the exps take {exp_clk / gemm_clk:.0%} as long as the matmuls.")

# %% [markdown]
# If the units only ever worked one after the other, one block would take the *sum* of the three
# compute bars (the load of the next block can already run under them: chapter 01's ring); if they
# overlapped perfectly, only the longest. The ratio of the two is the most overlap can buy:

# %%
serial = gemm_clk + exp_clk + fma_clk
print(f"one after the other: {serial:.0f} clk → tensor busy {gemm_clk / serial:.0%} of the time")
print(f"perfect overlap:     {gemm_clk:.0f} clk → tensor busy 100% of the time")

# %% [markdown]
# ## The roofline: is attention limited by memory or by math?
#
# A kernel that does F FLOPs on B bytes from HBM can go no faster than `max(F / peak, B / bandwidth)`.
# Attention reads Q, K, V once and writes O once, but does 4·S·d FLOPs per row of Q: its
# arithmetic intensity grows with the sequence length (S/2 FLOP per byte of fp16 Q, K, V and O,
# per head), and once it passes the ridge point the tensor cores, not HBM, set the roof.

# %%
import numpy as np

peak = hw.peak_tflops
bw = hw.hbm_bytes_per_s / 1e12           # TB/s
ridge = peak / bw                        # FLOP/byte
x = np.logspace(0, 4, 200)
fig, ax = plt.subplots(figsize=(7, 3.6))
ax.loglog(x, np.minimum(peak, bw * x), label="roofline (H100 SXM)", **style("bound", "rule"))
drawn = ((512, "o"), (2048, "s"), (8448, "D"))
for seq, marker in drawn:
    flops = 4 * seq * seq * 128                      # per head
    nbytes = 4 * seq * 128 * 2                       # Q, K, V read, O written, fp16
    ax.scatter(flops / nbytes, min(peak, bw * flops / nbytes), marker=marker, zorder=3,
               label=f"attention d128, S {seq}")
ax.scatter(8192 ** 3 * 2 / (3 * 8192 ** 2 * 2), peak, marker="P", s=90, zorder=3,
           label="GEMM 8192³")
ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
labels = [ax.text(ridge * 1.1, peak * 0.08, f"ridge {ridge:.0f} FLOP/B", fontsize=8),
          ax.text(1.2, FA2_OF_PEAK * peak * 1.1, f"FA2 on H100 (~{FA2_OF_PEAK:.0%})", fontsize=8,
                  color=style("paper")["color"])]
ax.axhline(FA2_OF_PEAK * peak, linewidth=1, label="paper: FA2 on H100 (FA3 §1)",
           **style("paper", "rule"))
ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
ax.set_ylabel("TFLOP/s")
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
fig.canvas.draw()              # where the labels landed: on no tick label, inside the axes
ticks = [t.get_window_extent() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
for label in labels:
    box = label.get_window_extent()
    assert not any(box.overlaps(t) for t in ticks), f"{label.get_text()!r} sits on a tick label"
    assert ax.get_window_extent().contains(box.x0, box.y0), f"{label.get_text()!r} off the axes"
# the points drawn: on the roof from S = 2·ridge on (S/2 FLOP per byte), on the slope before
for seq, _ in drawn:
    assert (seq / 2 >= ridge) == (min(peak, bw * seq / 2) == peak)
assert [seq for seq, _ in drawn if seq / 2 < ridge] and [seq for seq, _ in drawn if seq / 2 >= ridge]
md(f"The H100's ridge is at {ridge:.0f} FLOP per byte ({peak:.0f} TFLOP/s over {bw:.2f} TB/s of "
   f"HBM), so attention at d 128 is compute-bound from S ≈ {2 * ridge:.0f} on; the S "
   f"{TAB2['seqlen']} of FA3's tab. 2 sits at {TAB2['seqlen'] / 2:.0f} FLOP/B, "
   f"{TAB2['seqlen'] / 2 / ridge:.0f}× past the ridge. "
   f"So on Hopper, attention is a **compute** problem: the gap to the roof is idle tensor-core "
   f"time, not memory traffic. FA2's {FA2_OF_PEAK:.0%} of peak is not a memory limit.")

# %% [markdown]
# ## What the machine measured
#
# The first table's *h200-datasheet* column is the SM as published (L2 aside). On our H200 (same
# SM as the H100, faster HBM) small Gluon kernels measured each unit on its own
# (`python -m instruments.bench micro`, the kernels are in `instruments/micro/`, the numbers in `results/h200-micro.json`, 2026-12-02): a stream of
# wgmmas, a chain of exp2s, a chain of FMAs, TMA copies one at a time (latency) and in a ring on
# every SM (bandwidth), an mbarrier hand-off between two warps, and the clock under a full tensor
# load. The `h200` preset of the model takes most of them as they are; the rows marked *no* it
# does not, for the reason printed.

# %%
from course import measured, say

from fidelity.preset import MEASURED_FIELDS, NOT_TAKEN
from sim.hardware import H200, H200_DATASHEET

micro = measured("micro")
if micro is None:
    print("no microbenchmark results committed yet (results/h200-micro.json)")
else:
    got = micro["constants"]

    def shown(field, value):
        """A constant as printed: the clock in GHz, the others per SM clock."""
        if value is None:
            return "-"
        return f"{value / 1e9:.2f} GHz" if field == "clock_hz" else f"{value:.4g}"

    print(f"{'constant':26s} {'h200-datasheet':>14s} {'measured':>10s} {'h200 preset':>11s}  taken")
    taken = {}
    for key, field in MEASURED_FIELDS.items():
        now, preset = got.get(key), getattr(H200, field)
        taken[key] = now is not None and abs(preset / now - 1) < 1e-6
        print(f"{key:26s} {shown(field, getattr(H200_DATASHEET, field)):>14s} "
              f"{shown(field, now):>10s} {shown(field, preset):>11s}  "
              f"{'yes' if taken[key] else 'no'}")
    assert all(taken[k] for k in MEASURED_FIELDS
               if k not in NOT_TAKEN and k != "clock_hz_under_load")
    for key in NOT_TAKEN:
        say(f"{key}: not taken, {NOT_TAKEN[key]}")
    rows = {r["N"]: r for r in micro["rows"]
            if r["bench"] == "wgmma" and r.get("ok") and r["dtype"] == "float16"
            and r["warpgroups"] == 2 and r["wait"] == 1}
    lone = {r["N"]: r for r in micro["rows"]
            if r["bench"] == "wgmma" and r.get("ok") and r["dtype"] == "float16"
            and r["warpgroups"] == 1 and r["wait"] == 0}
    fig, ax = plt.subplots(figsize=(7, 3))
    ns = sorted(rows)
    ax.plot(ns, [n / 2 for n in ns], **style("bound", "rule"),
            label=f"math alone: N/2 clk at {H200_DATASHEET.tensor_flop_per_clk:.0f} FLOP/clk")
    ax.plot(ns, [rows[n]["clk_per_instr"] for n in ns], label="measured: 2 warpgroups, queued "
            "(wait 1)", **style("measured"))
    ax.plot(sorted(lone), [lone[n]["clk_per_instr"] for n in sorted(lone)],
            label="measured: 1 warpgroup, each waited for (wait 0)", markerfacecolor="white",
            **style("measured"))
    ax.set_xlabel("wgmma m64nNk16: N")
    ax.set_ylabel("SM clocks per instruction")
    waited_extra = [lone[n]["clk_per_instr"] - n / 2 for n in sorted(lone)]
    queued_extra = max(abs(rows[n]["clk_per_instr"] - n / 2) for n in rows)
    ax.set_title(f"queued: within {queued_extra:.1f} clk of the math alone; "
                 f"waited for: {min(waited_extra):.0f}-{max(waited_extra):.0f} clk more", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    cap = H200.power_cap
    assert not taken["clock_hz_under_load"] and H200.clock_hz > got["clock_hz_under_load"]
    print()
    say(f"clock_hz_under_load: not taken as the preset's clock. The h200-datasheet preset runs "
        f"at the H100's {H200_DATASHEET.clock_hz / 1e9:.2f} GHz (FA3's setting); the h200 preset "
        f"takes our H200's boost clock, {H200.clock_hz / 1e9:.2f} GHz, as a ceiling only. The "
        f"clock a kernel runs at comes from the power cap (PowerCap, fitted through clocks like "
        f"this one): a bare wgmma stream holds {cap.clock_hz(1.0, 0.0, H200.clock_hz) / 1e9:.2f} "
        f"GHz there (measured: {got['clock_hz_under_load'] / 1e9:.2f}), a GEMM moving 48 B/clk "
        f"through L2 {cap.clock_hz(0.97, 48.0, H200.clock_hz) / 1e9:.2f} GHz.")

# %% [markdown]
# Three things the measurements say that the datasheet does not, printed from them below. The
# clocks are cycle counts over wall time (nvidia-smi reads high under the power cap), one per kernel
# that `python -m fidelity.calibrate` reads off the committed measurements and Proton traces.
# The model's `PowerCap` turns a kernel's activity into its clock: one clock costs a fixed time
# plus a share for the tensor cores' busy fraction, for each byte per clock through L2 and for the
# softmax's exps, a plane `python -m fidelity.calibrate` fits through those measured clocks.

# %%
if micro is not None:
    from fidelity.calibrate import clock_points

    points = clock_points()
    attn = [p.clock_hz / 1e9 for p in points if "attention" in p.source]
    full_gemm = [p for p in points if p.source.endswith(("gemm_ws.summary.json",
                                                         "gemm_ws_pingpong.summary.json"))]
    gemm_ghz = [p.clock_hz / 1e9 for p in full_gemm]
    gemm_tbs = [p.l2_bytes_per_clk * H200.sms * p.clock_hz / 1e12 for p in full_gemm]
    l2_micro_tbs = got["l2_bytes_per_clk_per_sm"] * H200.sms * H200.clock_hz / 1e12
    power = float(micro["environment"]["power_limit"].split()[0])
    md(f"""* **A stream of queued wgmmas loses nothing**: {got['tensor_flop_per_clk']:.0f} FLOP/clk/SM
  at every N (within {queued_extra:.1f} clk per instruction of N/2), the datasheet's {H200_DATASHEET.tensor_flop_per_clk}.
  On the `h200` preset the
  per-wgmma overhead is therefore {H200.wgmma_overhead_clk:g}, and on the `h100` preset — the
  same die on the paper's board — {H100.wgmma_overhead_clk:g} too. Before this measurement the
  model charged {H200_DATASHEET.wgmma_overhead_clk:g} clk per wgmma, fitted to the paper's tab. 2
  (the datasheet presets still do): a stand-in for the clock the paper's H100 ran at, which
  the paper does not give. A clock slows every instruction in proportion to its math; a fixed
  charge slows narrow ones more, and ranked FA3's d 256 under its d 128 (chapter 05). The clock
  is the next point but one.
* **Waiting for a wgmma** (`warpgroup_mma_wait(0)` right after it) exposes
  {min(waited_extra):.0f}-{max(waited_extra):.0f} clk on top of its math (the figure's three N;
  the median, {got['wgmma_latency_clk']:.0f}, is the `h200` preset's wgmma latency) — the latency a
  softmax pays before it can read its scores.
* **The clock is not a constant.** Our H200 sits at its {power:.0f} W power cap under any sustained
  tensor load, and the clock it holds there depends on what it runs:
  {got['clock_hz_under_load'] / 1e9:.2f} GHz for a bare wgmma stream,
  {min(gemm_ghz):.2f}-{max(gemm_ghz):.2f} GHz for the full 8192³ GEMMs, which also pull
  {min(gemm_tbs):.1f}-{max(gemm_tbs):.1f} TB/s through L2, {min(attn):.2f}-{max(attn):.2f} GHz for
  our attention kernels, against {H200.clock_hz / 1e9:.2f} GHz when it starts cool. L2 itself does
  not slow down with the SM clock: its bandwidth is per second ({l2_micro_tbs:.1f} TB/s in the
  TMA microbenchmark, {H200.l2_bytes_per_s / 1e12:.1f} TB/s in our pingpong GEMM, which the
  preset takes).""")

# %% [markdown]
# ## The kernel beside the model
#
# The wgmma microbenchmark above is `instruments/micro/wgmma.py`: on every SM one CTA issues
# `warpgroup_mma`s back to back from shared memory, and after each waits until at most `WAIT`
# are pending. Beside it, the model's tensor cores (`TensorCore` in `sim/engine.py`): one queue
# that the warpgroups' wgmmas enter, served one instruction at a time, each taking its cycles,
# with the group's completion `latency` later. Both read from their files:

# %%
from course import beside, on_hopper

beside("sim.engine:TensorCore._serve", "instruments.micro.wgmma:wgmma_rate_kernel")

# %% [markdown]
# On a Hopper GPU the next cell runs that kernel (two warpgroups, `WAIT` 1, N 64, 128, 256) and
# prints its clocks per instruction beside the math alone, N/2; elsewhere it says what it needs.
# `python -m instruments.bench micro` runs every microbenchmark and writes
# `results/h200-micro.json`.

# %%
def live_wgmma():
    import torch

    from instruments.micro import common, wgmma
    from instruments.micro.clock import iters_for

    gen = torch.Generator(device=common.DEVICE)
    gen.manual_seed(0)
    for n in (64, 128, 256):
        row = wgmma.run(n, 2, 1, torch.float16, iters_for(0.02, 16 * (n / 2 + 40)), gen)
        if not row["ok"]:
            raise AssertionError(f"wgmma N {n}: {row}")
        print(f"N {n:3d}: {row['clk_per_instr']:6.1f} clk per wgmma, math alone {n / 2:.0f}")


on_hopper("The wgmma microbenchmark", live_wgmma)

# %% [markdown]
# **Exercise** [`exercises/ch00_rates`](../exercises/ch00_rates/README.md): compute a wgmma group's and a
# softmax's cycles from these rates; the grader runs the model step by step against you.
