# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 — What if: Blackwell and FlashAttention-4
#
# **This chapter is a model, not a measurement: there is no Blackwell GPU here.**
#
# **Question.** Blackwell (B200) doubles the tensor cores' rate per SM — 8192 dense fp16 FLOP per
# clock against Hopper's 4096 — but its SFU still does 16 exps per clock per SM (FA4 §2.2). What
# happens to FA3's schedule?
#
# **The idea.** On Hopper the exps took half as long as the GEMMs (chapter 00). Double the GEMM
# rate and keep the exp rate, and the exps take *as long as* the GEMMs: overlap can no longer hide
# them behind the tensor core, because there is not enough tensor work left to hide them behind.
# Does the bottleneck move from the tensor core to the SFU? Ask the model.

# %%
from course import md
from sim.config import AttentionConfig
from sim.hardware import B200, H200_DATASHEET
from sim.plot import ablation, gantt, steady_window, utilization_bars
from sim.predict import predict

shape = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}
preds = {hw.name: predict(AttentionConfig(variant="fa3", **shape), hw, keep_trace=True)
         for hw in (H200_DATASHEET, B200)}   # both from datasheets alone
for name, p in preds.items():
    u = p.utilization
    print(f"{name}: fa3 {p.tflops:5.0f} TFLOP/s   tensor {u['tensor']:.0%}   SFU {u['sfu']:.0%}")
utilization_bars({n: p.utilization for n, p in preds.items()}, title="fa3's schedule, two machines");

# %%
p = preds["b200"]
gantt(p.trace, "fa3's schedule on the b200 preset (steady state)", steady_window(p.trace, 0.1),
      clock_hz=B200.clock_hz);

# %%
u_h, u_b = preds["h200-datasheet"].utilization, preds["b200"].utilization
busiest = max(u_b, key=u_b.get)
md(f"The lanes: `tma` (the copy engine: K and V), `tensor`, `sfu` (the exps), `fma` (the "
   f"softmax's scale and sum, the rescale of O, the pack of P) and `lsu` (the warps' own loads "
   f"and stores: here only O on its way out, {u_b['lsu']:.1%} of the time, so it is blank in "
   f"this window), then the warpgroups. The tensor lane now has gaps: each consumer's softmax "
   f"outlasts the other's (twice as fast) GEMMs, and the tensor core's busy share falls from "
   f"{u_h['tensor']:.0%} on the datasheet Hopper (`h200-datasheet`) to {u_b['tensor']:.0%}. The SFU is now as busy as the "
   f"tensor core ({u_b['sfu']:.0%}), but no unit is the bottleneck: the busiest is `{busiest}` at "
   f"{u_b[busiest]:.0%} (the K/V loads), and none is near full. On the consumer lanes the time between "
   f"GEMMs goes to the chain through each softmax — *softmax: row max (latency)*, the exps, the "
   f"*softmax: dependency stall* — and to *wait: data to land*, which no single unit's speed "
   f"shortens.")

# %% [markdown]
# The `b200` preset runs Hopper's schedule
# unchanged — the same tiles, wgmma-style 64-row MMAs, accumulators in registers — which is exactly
# what FA4 did *not* do. (One more assumption, marked in `sim/hardware.py`: an MMA's fixed cycles
# are taken to shrink with its math, to half of Hopper's.)
#
# ## What FA4 changed, as knobs on the model
#
# %%
fa4_tflops = 1613                               # FA4 abstract, BF16 forward on B200
b300_exp_per_clk = 32                           # FA4 §2.2; docs/constants.md
md(f"FA4 (arXiv 2603.05451) reaches {fa4_tflops} TFLOP/s BF16 on B200 "
   f"({fa4_tflops / B200.peak_tflops:.0%} of the `b200` preset's peak). Two of its moves are "
   f"about the softmax:\n"
   f"* compute part of the exps in software, as polynomials on the FMA pipe, next to the SFU — in "
   f"the model, a higher effective `sfu_exp_per_clk`;\n"
   f"* B300 doubles the SFU itself to {b300_exp_per_clk} exps per clock per SM (FA4 §2.2; "
   f"`docs/constants.md`).\n\n"
   f"The others (TMEM holds the accumulators so registers stop limiting the tiles; 128×N MMAs by "
   f"one thread) change the schedule itself and are beyond this what-if.")

# %% [markdown]
# How many exps a clock does the software exp buy? Send a fraction f of them to the FMA pipe.
# The SFU then takes (1 − f) / `sfu_exp_per_clk` clocks per score; the FMA pipe, which already
# carries the softmax's own FMA work and the pack of P (`softmax_fma_per_elem`,
# `softmax_pack_per_elem` instructions per score), takes (those + f · c) / `fma_lanes_per_clk`,
# where c is the FMA-pipe instructions of one polynomial exp. Both finish together at
# f = (F − S·a) / (F + S·c), with S, F the two rates and a the FMA work per score; the SFU then
# sustains S / (1 − f) scores a clock. The cost c is our assumption, not FA4's figure: a cubic by
# Horner's rule (three FMAs) and one subtraction for the fraction, the exponent bits on the
# integer pipe.

# %%
S, F = B200.sfu_exp_per_clk, B200.fma_lanes_per_clk
a = B200.softmax_fma_per_elem + B200.softmax_pack_per_elem
c = 4                                            # assumed FMA-pipe instructions per software exp
f = (F - S * a) / (F + S * c)
split_rate = S / (1 - f)
print(f"S {S} exp/clk, F {F} FMA/clk, a {a:g}, c {c}: f = {f:.2f}, {split_rate:.1f} exps/clk")
whatif = {
    f"b200 as is ({S} exp/clk)": B200,
    f"+ {f:.0%} of the exps on FMA ({split_rate:.1f}/clk)": B200.with_(sfu_exp_per_clk=split_rate),
    f"B300-like SFU ({b300_exp_per_clk}/clk)": B200.with_(sfu_exp_per_clk=b300_exp_per_clk),
}
tf = {k: predict(AttentionConfig(variant="fa3", **shape), hw).tflops for k, hw in whatif.items()}
for k, v in tf.items():
    print(f"{k:34s} {v:6.0f} TFLOP/s")
ablation(tf, peak=B200.peak_tflops, title="fa3's schedule on Blackwell what-ifs (model)");

# %%
gains = list(tf.values())
md(f"A faster exp helps, but only part of the way: {gains[0]:.0f} → {gains[1]:.0f} TFLOP/s with "
   f"the split, {gains[2]:.0f} with the B300's SFU — "
   f"{gains[2] / B200.peak_tflops:.0%} of peak at best. Once the exps shrink, the rest of the "
   f"softmax — its FMA work and its *softmax: dependency stall* on the consumer lanes — is what "
   f"outlasts the other warpgroup's GEMMs, and Hopper's schedule stays far from FA4's "
   f"{fa4_tflops / B200.peak_tflops:.0%}.")

# %% [markdown]
# The rest of FA4's gain comes
# from changing the schedule itself (TMEM, larger tiles, more softmax warps per MMA). The lesson
# carries over from Hopper: find the unit — or the chain — that is busiest, and give the others
# work that hides under it.
