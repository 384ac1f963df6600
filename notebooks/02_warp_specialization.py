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
# # 02 — Warp specialization and `setmaxnreg`
#
# **Question.** In chapter 01 the compute warps issued their own loads. What changes if one warp
# does nothing *but* issue loads?
#
# **The idea.** Split the CTA into roles. A **producer** warpgroup waits for a free slot
# (`empty`), announces the bytes (`expect`) and issues the TMA; **consumer** warpgroups wait for
# `full`, compute, and arrive on `empty`. The producer needs almost no registers, so `setmaxnreg`
# moves them to the consumers (FA3 §2.2, §3.1): 24 for the producer, 240 for each of two
# consumers. Nobody waits for anybody else at a CTA barrier any more: each consumer only waits for
# *its* data.

# %%

from sim.config import AttentionConfig, consumer_reg_budget
from sim.hardware import H100
from sim.plot import gantt, steady_window
from sim.predict import predict

hw = H100

# %% [markdown]
# ## The register budget
#
# 64K registers per SM, 128 threads per warpgroup. Three warpgroups sharing them evenly get 170
# each; with `setmaxnreg` the producer drops to 24 and the two consumers rise to 240. What must a
# consumer hold? Its output accumulator O (64 rows × d fp32), one tile of scores S (64 × block_n),
# with the intra-warpgroup overlap of chapter 04 also the previous P — plus bookkeeping.

# %%
for d, bn in ((64, 128), (128, 176), (256, 80)):
    o, s, p = 64 * d // 128, 64 * bn // 128, 64 * bn // 256
    print(f"d {d:3d}, block_n {bn:3d}: O {o:3d} + S {s:3d} + P {p:3d} + 32 = {o + s + p + 32:3d} "
          f"registers/thread")
print(f"\nbudget: evenly over 3 warpgroups {hw.regs_per_sm // 384}, "
      f"with setmaxnreg {consumer_reg_budget(hw, 2, True)} (2 consumers), "
      f"{consumer_reg_budget(hw, 3, True)} (3 consumers)")

# %% [markdown]
# At d 128 with FA3's 128×176 tile, a consumer needs 228 registers: it fits only because the
# producer gave its registers away. Ask the model for a tile that does not fit and it says which
# limit you crossed:

# %%
try:
    predict(AttentionConfig(variant="fa3", block_n=256), hw)
except ValueError as e:
    print(e)

# %% [markdown]
# ## `pipelined` vs `ws` on attention
#
# Same tiles, same ring (2 stages each for K and V). In `pipelined` the two consumer warpgroups
# issue the loads themselves and must meet at a CTA barrier before a slot is refilled — which ties
# them together: they reach the tensor core at the same moments and their softmaxes collide. In
# `ws` a producer does the loading, and the consumers only wait on `full`.

# %%
shape = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}
preds = {v: predict(AttentionConfig(variant=v, **shape), hw, keep_trace=True)
         for v in ("pipelined", "ws")}
for v, p in preds.items():
    print(f"{v:10s} {p.tflops:5.0f} TFLOP/s   tensor busy {p.utilization['tensor']:.0%}")
for v, p in preds.items():
    gantt(p.trace, f"{v}: {p.tflops:.0f} TFLOP/s (steady state)", steady_window(p.trace, 0.1),
          clock_hz=hw.clock_hz)

# %% [markdown]
# Look at the `tensor` lane: in `pipelined` both consumers' Q·Kᵀ go in together and both softmaxes
# (`sfu`) run together while the tensor core waits; the grey `bar.sync` waits on the consumer
# lanes are the CTA barrier. In `ws` the two consumers drift apart and one's softmax lands under the
# other's GEMMs. (Chapter 03 makes that alternation deliberate.)

# %% [markdown]
# How many consumer warpgroups? FA3 uses 3 at d 64 (192-row tiles) and 2 at d 128. Try it — the
# register budget per consumer shrinks as they multiply:

# %%
from course import explore


def ws_with(consumers, headdim):
    try:
        p = predict(AttentionConfig(variant="ws", batch=2, heads=2048 // headdim, seqlen=4096,
                                    headdim=headdim, consumers=consumers,
                                    block_m=64 * consumers, block_n=128), hw)
    except ValueError as e:
        print(e)
        return
    print(f"ws, {consumers} consumers, d {headdim}: {p.tflops:.0f} TFLOP/s, "
          f"tensor {p.utilization['tensor']:.0%}")


explore(ws_with, consumers=(1, 3, 1, 2), headdim=(64, 256, 64, 128))

# %% [markdown]
# ## The real kernel
#
# `kernels/gemm/ws.py` is a warp-specialized GEMM in Gluon: `gl.warp_specialize` runs the
# producer partition (one warp, `worker_num_regs` → `setmaxnreg`) beside the two consumer
# warpgroups, which share each 128×256 tile (CUTLASS's "cooperative" kernel). Its PTX holds
# `setmaxnreg` and the others' does not — `tests/kernels/test_gemm_compile.py` checks that on
# every CI run.

# %%
from course import gemm_ladder

gemm_ladder(["sequential", "pipelined", "ws", "ws_pingpong"])

# %% [markdown]
# **Exercise** [`exercises/ch02_ws_gluon`](../exercises/ch02_ws_gluon/README.md): fill in the
# producer partition of a warp-specialized Gluon GEMM — the `empty` wait, the `expect`, the TMA
# copies — graded by compiling it for sm_90a and reading the PTX (and, on a Hopper GPU, by
# running it).
