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
# Ask the model for a configuration that does not fit and it says which limit you crossed: a third
# consumer warpgroup at d 128 crosses the register budget of three consumers printed above, a
# K/V block of 256 rows at d 128 the shared memory:

# %%
from course import say

tries = {"ws, 3 consumers, d 128, 192×176 tiles":
         AttentionConfig(variant="ws", consumers=3, block_m=192, block_n=176),
         "fa3, d 128, 128×256 tiles": AttentionConfig(variant="fa3", block_n=256)}
crossed = {}
for what, cfg in tries.items():
    try:
        predict(cfg, hw)
    except ValueError as e:
        crossed[what] = str(e)
        say(f"{what}: {e}")
registers, smem = crossed.values()
assert len(crossed) == 2 and "registers/thread" in registers and "shared memory" in smem

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
from sim import claims

shape = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}
preds = {v: predict(AttentionConfig(variant=v, **shape), hw, keep_trace=True)
         for v in ("pipelined", "ws")}
for v, p in preds.items():
    print(f"{v:10s} {p.tflops:5.0f} TFLOP/s   tensor busy {p.utilization['tensor']:.0%}")

# %% [markdown]
# Under the `tensor` and `sfu` lanes each consumer has a lane of its own: its wgmmas, its exps.
# Watch those: in the merged `sfu` lane two softmaxes side by side look like one.

# %%
for v, p in preds.items():
    gantt(p.trace, f"{v}: {p.tflops:.0f} TFLOP/s (steady state)", steady_window(p.trace, 0.06),
          clock_hz=hw.clock_hz, split=("tensor", "sfu"))
    plt.show()
together = {v: claims.exp_coincidence(p.trace) for v, p in preds.items()}
offset = {v: claims.qk_offset(p.trace) for v, p in preds.items()}
assert claims.drift_apart(preds["ws"].trace) and not claims.drift_apart(preds["pipelined"].trace)
filled = {}
for v, p in preds.items():   # the share of each softmax with the other consumer's GEMMs under it
    sm, under = claims.softmax(p.trace), claims.softmax_under_others(p.trace)
    filled[v] = sum(under.values()) / sum(sm[k][1] - sm[k][0] for k in under)
assert filled["ws"] > filled["pipelined"] and min(claims.softmax_under_others(preds["ws"].trace).values()) > 0


def mean(d):
    return sum(d.values()) / len(d)


md(f"What the figures show, checked on their traces (`sim.claims`). In `pipelined` both "
   f"consumers' Q·Kᵀ start within {max(offset['pipelined'].values()):.0f} clk of each other, "
   f"and while consumer 0 runs its exps consumer 1 is running its own "
   f"{mean(together['pipelined']):.0%} of the time: the two softmaxes collide on the SFU; the "
   f"consumers' thin *waiting* spans are the CTA barrier "
   f"(`bar.sync`). In `ws` the two drift apart: their Q·Kᵀ start "
   f"{min(offset['ws'].values()):.0f} to {max(offset['ws'].values()):.0f} clk apart, and the "
   f"softmaxes overlap only {mean(together['ws']):.0%} of the time: the other consumer's GEMMs "
   f"are on the tensor core during {filled['ws']:.0%} of the softmaxes' time (some in every "
   f"steady block), "
   f"against {filled['pipelined']:.0%} in `pipelined`. (Chapter 03 makes that alternation "
   f"deliberate.)")

# %% [markdown]
# How many consumer warpgroups? FA3 uses 3 at d 64 (192-row tiles) and 2 at d 128. Try it — the
# register budget per consumer shrinks as they multiply, and where it no longer fits the figure
# says which limit was crossed. The setting is the one above (batch 4, S 8448, H·d 2048, so 16
# heads at d 128; each K/V block the widest that fits), so 2 consumers at d 128 is the `ws`
# figure above:

# %%
from course import explore


def ws_with(consumers, headdim):
    """The `ws` timeline with this many consumers at this head dim, or the limit it crosses."""
    try:
        p = predict(AttentionConfig(variant="ws", batch=4, heads=2048 // headdim, seqlen=8448,
                                    headdim=headdim, consumers=consumers,
                                    block_m=64 * consumers), hw, keep_trace=True)
    except ValueError as e:
        fig, ax = plt.subplots(figsize=(12, 1.2))
        ax.axis("off")
        ax.text(0, 0.5, f"{consumers} consumers, d {headdim}: {e}", va="center", wrap=True)
        return
    tile = f"{p.config['block_m']}×{p.config['block_n']}"
    gantt(p.trace, f"ws, {consumers} consumers, d {headdim}, {tile} tiles: {p.tflops:.0f} "
          f"TFLOP/s, tensor busy {p.utilization['tensor']:.0%} (steady state)",
          steady_window(p.trace, 0.06), clock_hz=hw.clock_hz, split=("sfu",))


explore(ws_with, consumers=(1, 3, 1, 2), headdim=(64, 256, 64, 128))

# %% [markdown]
# ## The real kernels, beside the model
#
# Two Gluon kernels carry this chapter's idea: the attention kernel whose model you saw above, and
# a GEMM. In both, `gl.warp_specialize` runs the producer partition (one warp,
# `worker_num_regs` → `setmaxnreg`) beside the consumer warpgroups. The attention consumer beside
# the model's, step by step, each listing read from its file (`fidelity.pairs.steps`, held equal
# by `tests/model/test_pairs.py`):

# %%
from course import kernel_file, run_kernels, steps_beside
from fidelity.pairs import attention_pairs, gemm_pairs

pair = attention_pairs()["ws"]
md(f"The attention kernel: `{kernel_file(pair)}` (its `consumer`; the producer is "
   f"`partitions.producer`). The GEMM: `{kernel_file(gemm_pairs()['ws'])}`, whose two consumers "
   f"share each 128×256 tile (CUTLASS's \"cooperative\" kernel).")
steps_beside(pair, "sim/attention/ws.py: consumer", f"{kernel_file(pair)}: consumer")

# %% [markdown]
# The GEMM's PTX holds `setmaxnreg` and the non-specialized GEMMs' does not —
# `tests/kernels/test_gemm_compile.py` checks that on every CI run. On a Hopper GPU the next cell
# runs the attention kernels (`pipelined`, `ws`) beside SDPA's flash and cuDNN backends;
# elsewhere it says what they need.

# %%
run_kernels("attention", ["pipelined", "ws"]);

# %% [markdown]
# **What our H200 measured is the GEMM's.** The numbers below are the GEMM kernels at
# 8192×8192×8192 fp16 (live on a Hopper GPU, else the committed measurements in
# `results/h200.json`), not attention's: the attention timelines above are the model's, and the
# attention kernels' measurements are chapter 05's.

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
