# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 — TMA and the multi-stage ring
#
# **Question.** A GEMM walks K in blocks: load a block of A and B into shared memory, multiply,
# repeat. Why is "load, wait, multiply" so slow, and how many blocks must be in flight to fix it?
#
# **The idea.** Hopper's TMA copy engine moves a whole tile on one thread's command and reports
# on an **mbarrier** when the bytes have landed. A *ring* of `s` slots, each with a `full`
# barrier (bytes landed) and an `empty` barrier (consumers done), lets the copy of block j+s−1
# fly while block j is multiplied. Block j lives in slot `j % s`; the barrier's *phase parity*
# `(j // s) & 1` tells one lap of the ring from the next.

# %%
import matplotlib.pyplot as plt

from sim import gemm
from sim.config import GemmConfig
from sim.hardware import H100
from sim.plot import gantt
from sim.predict import predict

hw = H100

# %% [markdown]
# ## `sequential`: one slot
#
# With one slot the next block cannot be loaded until this one is multiplied, so every block pays
# a whole TMA round trip (latency plus transfer) with the tensor core idle. The model's GEMM CTA
# walks one 128×256 tile over 6 blocks of K = 64:

# %%
def timeline(variant, stages=None, k_blocks=6, title=None):
    cfg = gemm.prepare(GemmConfig(variant=variant, stages=stages), hw)
    clk, trace = gemm.simulate(cfg, hw, n_tiles=1, k_blocks=k_blocks)
    util = trace.utilization(clk)["tensor"]
    gantt(trace, title or f"{variant}, {cfg.stages} stage(s): {clk:.0f} clk, tensor busy {util:.0%}")
    return clk


t_seq = timeline("sequential")

# %% [markdown]
# Blank space on the `tensor` lane is idle time. Each block is "load A, load B (TMA), wait,
# multiply". Now the same loop with a ring of 3 slots, refilled by the compute warps themselves
# (`pipelined`): the loads of the next blocks run under the current block's wgmmas.

# %%
t_pipe = timeline("pipelined", stages=3)
print(f"pipelined is {t_seq / t_pipe:.2f}× faster on this CTA")

# %% [markdown]
# ## How many stages?
#
# Each slot costs shared memory (48 KiB for a 128×256×64 fp16 tile of A and B), and shared memory
# is 227 KiB per block. The whole-GPU prediction at 8192³ for 1 to 3 stages (4 do not fit beside
# the 64 KiB epilogue tile — try it: the model says which limit you hit):

# %%
stages = [1, 2, 3]
tf = [predict(GemmConfig(variant="pipelined" if s > 1 else "sequential", stages=s), hw).tflops
      for s in stages]
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(stages, tf, "o-")
ax.set_xticks(stages)
ax.set_xlabel("ring stages")
ax.set_ylabel("model TFLOP/s (8192³ fp16)")
ax.set_ylim(0, hw.peak_tflops)
ax.axhline(hw.peak_tflops, color="grey", linestyle="--", linewidth=1)
fig.tight_layout()
try:
    predict(GemmConfig(variant="pipelined", stages=4), hw)
except ValueError as e:
    print("4 stages:", e)

# %% [markdown]
# Two slots already hide the copy: a 128×256×64 block is 1024 clocks of tensor work per consumer
# pair, a TMA round trip a few hundred. Beyond that, extra slots only absorb jitter. Drag the
# slider to see the timeline change (without widgets, the figures above are the same story).

# %%
from course import explore

explore(lambda stages: timeline("pipelined" if stages > 1 else "sequential", stages),
        stages=(1, 3, 1, 2))

# %% [markdown]
# ## The real kernels
#
# `kernels/gemm/sequential.py` and `kernels/gemm/pipelined.py` are the same two loops in Gluon:
# `tma.async_copy_global_to_shared` into a ring, `mbarrier.expect` + `mbarrier.wait(full[s],
# phase)`, `warpgroup_mma`. On a Hopper GPU the cell below times them live; elsewhere it plots what
# our H200 measured (`results/h200.json`, same run as cuBLAS).

# %%
from course import gemm_ladder

best = gemm_ladder(["sequential", "pipelined"])
if best:
    names = [n for n in ("sequential", "pipelined", "cublas") if n in best]
    model = {"sequential": tf[0], "pipelined": tf[-1]}
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(names, [best[n] for n in names], color="#2ca02c", label="measured")
    ax.scatter([n for n in names if n in model], [model[n] for n in names if n in model],
               marker="D", color="#1f77b4", zorder=3, label="model (h100 preset)")
    ax.set_ylabel("TFLOP/s")
    ax.legend(fontsize=8)
    fig.tight_layout()

# %% [markdown]
# **Exercise** [`exercises/ch01_ring`](../exercises/ch01_ring/README.md): write the producer loop of
# the ring in SimPy — wait `empty`, `expect` on `full`, issue the TMA — and run it in the model
# while a checker watches the ring's rules.
