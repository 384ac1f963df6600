# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
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
import matplotlib.pyplot as plt

from course import md
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
# consumer hold? Its output accumulator O (64 rows by d columns, fp32), one tile of scores S (64
# rows by block_n, fp32), with the intra-warpgroup overlap of chapter 04 also the previous P (fp16)
# — plus bookkeeping.

# %%
need = {}
for d, bn in ((64, 128), (128, 176), (256, 80)):
    o, s, p = 64 * d // 128, 64 * bn // 128, 64 * bn // 256
    need[d] = o + s + p + 32
    print(f"d {d:3d}, block_n {bn:3d}: O {o:3d} + S {s:3d} + P {p:3d} + 32 = {need[d]:3d} "
          f"registers/thread")
even, two = hw.regs_per_sm // 384, consumer_reg_budget(hw, 2, True)
print(f"\nbudget: evenly over 3 warpgroups {even}, "
      f"with setmaxnreg {two} (2 consumers), {consumer_reg_budget(hw, 3, True)} (3 consumers)")
md(f"At d 128 with FA3's 128×176 tile, a consumer needs {need[128]} registers per thread: more "
   f"than the {even} of an even split, within the {two} it gets once the producer has given its "
   f"registers away.")

# %% [markdown]
# Ask the model for a tile that does not fit and it says which limit you crossed:

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
#
# The timelines have one lane per unit of the SM — `unit: tma` (the copies of K and V),
# `unit: tensor` (Q·Kᵀ and P·V), `unit: sfu` (the softmax's exps), `unit: fma` (its scaling and
# sums, the rescale of O, the pack of P to fp16) and `unit: lsu`, the warps' own loads and stores
# through the load/store pipe (here only each tile's store of O at its end, outside the steady-state
# window shown, so the lane is empty) — then one lane per warpgroup: what it issued, and, thin,
# how long it was waiting on a barrier.

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
# (`sfu`) run together while the tensor core waits; the consumers' "waiting on a barrier" spans
# are the CTA barrier (`bar.sync`). In `ws` the two consumers drift apart and one's softmax lands under the
# other's GEMMs. (Chapter 03 makes that alternation deliberate.)

# %% [markdown]
# How many consumer warpgroups? FA3 uses 3 at d 64 (192-row tiles) and 2 at d 128. Try it — the
# register budget per consumer shrinks as they multiply, and where it no longer fits the figure
# says which limit was crossed:

# %%
from course import explore


def ws_with(consumers, headdim):
    """The `ws` timeline with this many consumers at this head dim, or the limit it crosses."""
    try:
        p = predict(AttentionConfig(variant="ws", batch=2, heads=2048 // headdim, seqlen=4096,
                                    headdim=headdim, consumers=consumers,
                                    block_m=64 * consumers, block_n=128), hw, keep_trace=True)
    except ValueError as e:
        fig, ax = plt.subplots(figsize=(12, 1.2))
        ax.axis("off")
        ax.text(0, 0.5, f"{consumers} consumers, d {headdim}: {e}", va="center", wrap=True)
        return
    gantt(p.trace, f"ws, {consumers} consumers, d {headdim}: {p.tflops:.0f} TFLOP/s, tensor busy "
          f"{p.utilization['tensor']:.0%} (steady state)", steady_window(p.trace, 0.1),
          clock_hz=hw.clock_hz)


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

gemm_ladder(["sequential", "pipelined", "ws", "ws_pingpong"]);

# %% [markdown]
# **Exercises.** [`exercises/ch02_producer`](../exercises/ch02_producer/README.md): write the
# producer warpgroup, in SimPy, for a K/V ring the model does not have — K_j and V_j behind one
# `full` barrier per slot — and let the grader hold it to the ring's rules from the run's event log
# (every block once into its slot, no refill before release, bytes expected = bytes copied, the
# consumers never starved). [`exercises/ch02_ws_gluon`](../exercises/ch02_ws_gluon/README.md):
# split the producer of a warp-specialized Gluon GEMM into a loader warp per operand — each with
# its own `full` barrier, both waiting on one `empty` — and write the consumers' waits and the
# `warp_specialize` call; graded by compiling it for sm_90a and reading the protocol from the
# compiler's IR (and, on a Hopper GPU, by running it).
