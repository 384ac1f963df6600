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
# The bottleneck moves from the tensor core to the SFU.

# %%
from sim.config import AttentionConfig
from sim.hardware import B200, H100
from sim.plot import ablation, gantt, steady_window, utilization_bars
from sim.predict import predict

shape = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}
preds = {hw.name: predict(AttentionConfig(variant="fa3", **shape), hw, keep_trace=True)
         for hw in (H100, B200)}
for name, p in preds.items():
    u = p.utilization
    print(f"{name}: fa3 {p.tflops:5.0f} TFLOP/s   tensor {u['tensor']:.0%}   SFU {u['sfu']:.0%}")
utilization_bars({n: p.utilization for n, p in preds.items()}, title="fa3's schedule, two machines")

# %%
p = preds["b200"]
gantt(p.trace, "fa3's schedule on the b200 preset (steady state)", steady_window(p.trace, 0.1),
      clock_hz=B200.clock_hz)

# %% [markdown]
# The tensor lane now has gaps: each consumer's softmax outlasts the other's (twice as fast)
# GEMMs, and the SFU is as busy as the tensor core. The `b200` preset runs Hopper's schedule
# unchanged — the same tiles, wgmma-style 64-row MMAs, accumulators in registers — which is exactly
# what FA4 did *not* do. (One more assumption, marked in `sim/hardware.py`: an MMA's fixed cycles
# are taken to shrink with its math, to half of Hopper's.)
#
# ## What FA4 changed, as knobs on the model
#
# FA4 (arXiv 2603.05451) reaches 1613 TFLOP/s BF16 on B200 (71% of peak). Two of its moves are
# about this bottleneck:
# * compute part of the exps in software, as polynomials on the FMA pipe, next to the SFU — in the
#   model, a higher effective `sfu_exp_per_clk`;
# * B300 doubles the SFU itself to 32 exps per clock per SM (FA4 §2.2; `docs/constants.md`).
#
# The others (TMEM holds the accumulators so registers stop limiting the tiles; 128×N MMAs by one
# thread) change the schedule itself and are beyond this what-if.

# %%
whatif = {
    "b200 as is (16 exp/clk)": B200,
    "+ half the exps on FMA (≈24/clk)": B200.with_(sfu_exp_per_clk=24),
    "B300-like SFU (32/clk)": B200.with_(sfu_exp_per_clk=32),
}
tf = {k: predict(AttentionConfig(variant="fa3", **shape), hw).tflops for k, hw in whatif.items()}
for k, v in tf.items():
    print(f"{k:34s} {v:6.0f} TFLOP/s")
ablation(tf, peak=B200.peak_tflops, title="fa3's schedule on Blackwell what-ifs (model)")

# %% [markdown]
# A faster exp helps, but only part of the way: once the exps shrink, the rest of the softmax —
# its FMA work and its dependency stalls (grey on the consumer lanes) — is what outlasts the other
# warpgroup's GEMMs, and Hopper's schedule stays far from FA4's 71%. The rest of FA4's gain comes
# from changing the schedule itself (TMEM, larger tiles, more softmax warps per MMA). The lesson
# carries over from Hopper: find the unit — or the chain — that is busiest, and give the others
# work that hides under it.
