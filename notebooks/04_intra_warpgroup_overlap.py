# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 — Overlap inside one warpgroup, and why three stages lose
#
# **Question.** Pingpong puts one warpgroup's softmax under *another's* GEMMs. Can a warpgroup put
# its softmax under its *own* GEMMs?
#
# **The idea** (FA3 §3.2, alg. 2). wgmma is asynchronous. Issue Q·K_jᵀ and, right behind it,
# P_{j-1}·V_{j-1}; wait only for the scores (`warpgroup_mma_wait(1)`), and compute softmax j while
# P·V still runs on the tensor core. The price is registers: S_j and P_{j-1} are live at once.
# FA3 app. B.3 tried a third stage — softmax j under *both* Q·K_{j+1}ᵀ and P_{j-1}·V_{j-1} — and
# found it slower: two score tiles no longer fit the 240 registers, so the K/V blocks had to shrink.

# %%
import json

import matplotlib.pyplot as plt

from course import RESULTS, md
from sim import attention
from sim.config import AttentionConfig
from sim.hardware import H100
from sim.paper import TAB2_REPORTED
from sim.plot import gantt, kernel_style, steady_window
from sim.predict import predict

hw = H100
shape = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}

# %% [markdown]
# ## One consumer's loop, with and without the overlap

# %%
preds = {v: predict(AttentionConfig(variant=v, **shape), hw, keep_trace=True)
         for v in ("pipelined", "overlap")}
for v, p in preds.items():
    print(f"{v:10s} {p.tflops:5.0f} TFLOP/s   tensor {p.utilization['tensor']:.0%}")

# %% [markdown]
# The lanes are chapter 03's (`tma`, `tensor`, `sfu`, `fma`, and `lsu`: the warps' own stores of
# O at the end, blank inside this window), and under `tensor` and `sfu` one lane per consumer:
# that warpgroup's own wgmmas, its own exps. There is no producer lane, since `overlap`'s
# consumers issue their own loads (and meet at the CTA barrier, so they still collide with each
# other: that is chapter 02's and 03's business, not this one's). Read one consumer at a time:
# its *PV (wgmma)* of block j−1 on its `tensor` lane, its *softmax: row max (latency)* on its own
# lane below, its *softmax: exp (SFU)* on its `sfu` lane.

# %%
from sim import claims

trace = preds["overlap"].trace
window = steady_window(trace, 0.05)
gantt(trace, "overlap: each consumer's own wgmmas and exps (steady state)", window,
      clock_hz=hw.clock_hz, split=("tensor", "sfu"))
plt.show()
under = claims.pv_under_softmax(trace)
under_exp = claims.pv_under_softmax(trace, "exp")
pv_len = {k: e - s for k, (s, e) in claims.gemm(trace, "PV").items()}
assert claims.pv_overlaps_softmax(trace) and max(under_exp.values()) == 0
md(f"What the figure shows, checked on its trace (`sim.claims`): in every steady block each "
   f"consumer's Pⱼ₋₁·Vⱼ₋₁ does overlap its own softmax of block j — by "
   f"{min(under.values()):.0f} to {max(under.values()):.0f} clk of a P·V group that spans "
   f"{min(pv_len.values()):.0f} to {max(pv_len.values()):.0f} — but only the softmax's first "
   f"part, the row max, a dependent chain that holds no unit. Its exps start after P·V is "
   f"done: {max(under_exp.values()):.0f} clk of P·V under them, in every block.")

# %% [markdown]
# ## Why the exps miss P·V: the wgmma queue
#
# `wgmma.mma_async` returns at once only while the SM's wgmma queue has room. A warpgroup issues
# Q·K_jᵀ and P_{j-1}·V_{j-1} as one stream of m64nNk16 instructions, and its next instruction —
# the wait for the scores, then the softmax — comes only once the pipe has taken the last of
# them. The model's queue depth is the one read off Nsight Compute's samples of our fa3 kernel on
# the H200 (`wgmma_queue_depth` in `sim/hardware.py`, from `results/h200-stall.json`), so when
# the softmax can start, at most that many of the warpgroup's wgmmas are left: the tail of P·V,
# which the row max covers.

# %%
cfg = attention.prepare(AttentionConfig(variant="overlap", **shape), hw)
n_qk, n_pv = cfg.headdim // 16, cfg.block_n // 16      # k-steps of 16: Q·Kᵀ over d, P·V over block_n
deep = hw.with_(wgmma_queue_depth=n_qk + n_pv)
what_if = predict(AttentionConfig(variant="overlap", **shape), deep, keep_trace=True)
gantt(what_if.trace, f"overlap on an SM whose wgmma queue holds {n_qk + n_pv} (what-if)",
      steady_window(what_if.trace, 0.05), clock_hz=hw.clock_hz, split=("tensor", "sfu"))
plt.show()
deep_exp = claims.pv_under_softmax(what_if.trace, "exp")
assert claims.pv_overlaps_softmax(what_if.trace, "exp")
md(f"At d {cfg.headdim} with {cfg.block_n}-wide K/V blocks a consumer's Q·Kᵀ is {n_qk} wgmmas "
   f"and its P·V {n_pv}; the queue holds {hw.wgmma_queue_depth}. Give the same schedule a queue "
   f"of {n_qk + n_pv}, one whole Q·Kᵀ + P·V group (a what-if: our H200's holds "
   f"{hw.wgmma_queue_depth}), and the exps "
   f"run under the warpgroup's own P·V, {min(deep_exp.values()):.0f} to "
   f"{max(deep_exp.values()):.0f} clk a block (checked on this trace): "
   f"{what_if.tflops:.0f} TFLOP/s against {preds['overlap'].tflops:.0f}. On the real machine the "
   f"same limit shows: what is left of a warpgroup's own P·V once its scores are in is a few "
   f"hundred clocks (below, *Where it pays*).")

# %% [markdown]
# ## Two stages or three?
#
# The model picks the widest K/V block whose registers fit each variant: 176 for two stages, and
# for three — let it tell you:

# %%
blocks = {}
for v in ("fa3", "overlap3"):
    cfg = attention.prepare(AttentionConfig(variant=v, **shape), hw)
    blocks[v] = cfg.block_n
    mod = attention.module(v)
    regs = 64 * 128 // 128 + (mod.LIVE_S * 64 * cfg.block_n + mod.LIVE_P * 64 * cfg.block_n // 2) // 128 + 32
    p = predict(cfg, hw)
    print(f"{v:9s} block {cfg.block_m}×{cfg.block_n}, {cfg.stages} smem stages, "
          f"{regs} registers/thread → {p.tflops:.0f} TFLOP/s")

# %%
md(f"The third stage hides more softmax, but with K/V blocks of {blocks['overlap3']} instead of "
   f"{blocks['fa3']} every wgmma is narrower (more instructions, each paying its issue and descriptor work) "
   f"and every block pays its barrier waits and row reductions over fewer FLOPs. The model, like "
   f"the paper, finds the 2-stage pipeline faster. Try other head dims:")

# %%
ds = [64, 128, 256]
tf = {v: [predict(AttentionConfig(variant=v, batch=2, heads=2048 // d, seqlen=8192, headdim=d),
                  hw).tflops for d in ds] for v in ("fa3", "overlap3")}
fig, ax = plt.subplots(figsize=(5, 3))
for i, (v, ys) in enumerate(tf.items()):
    ax.bar([x + 0.38 * i for x in range(len(ds))], ys, 0.38, label=v, **kernel_style(v))
ax.set_xticks([x + 0.19 for x in range(len(ds))], [f"d {d}" for d in ds])
ax.set_ylabel("TFLOP/s (S 8K)")
ax.set_title(f"model, {hw.name} preset", fontsize=9)
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The real kernel, beside the model
#
# The model's `overlap` consumer and the kernel's are written with the same step names in the same
# order. The listing below is read from both files (`fidelity.pairs.steps`: each function's calls
# to the shared steps, loop by loop), not typed into this chapter; `tests/model/test_pairs.py`
# fails if the two ever differ.

# %%
from course import kernel_file, steps_beside
from fidelity.pairs import attention_pairs

pair = attention_pairs()["overlap"]
md(f"The kernel: `{kernel_file(pair)}` (its `consumer`), Gluon, run by `overlap_kernel` in the "
   f"same file; with a producer and turns the same consumer is fa3's.")
steps_beside(pair, "sim/attention/overlap.py: consumer", f"{kernel_file(pair)}: consumer")

# %% [markdown]
# It issues both GEMMs with `warpgroup_mma(..., is_async=True)` and waits with
# `warpgroup_mma_wait(1)`, and its PTX holds `wgmma.wait_group.sync.aligned 1`. That is not the
# end of the story: ptxas, not the PTX, decides where the wait lands. Left alone, ptxas hoists
# `warpgroup_mma_wait(0)` above the whole softmax (to pack P_j into the registers
# P_{j-1}·V_{j-1} is still reading) — zero of the block's 66 `MUFU.EX2` sit between the two
# waits in SASS, so the overlap this chapter is about is not there. `kernels/attention/steps.py`'s
# `schedule_fence` (a clock read ptxas will not move code across) puts it back, and
# `tests/kernels/test_attention_compile.py` counts the exps in SASS.
#
# On a Hopper GPU the next cell runs the kernel (`overlap`, and `fa3` which adds the producer and
# the turns) beside SDPA's FlashAttention-2 and cuDNN backends; elsewhere it says what it needs.

# %%
from course import run_kernels

run_kernels("attention", ["overlap", "fa3"]);

# %% [markdown]
# ## Where it pays on our H200

# %%
def first_rows(name):
    """variant -> TFLOP/s of the file's first run (later rows repeat the variants)."""
    out = {}
    for r in json.loads((RESULTS / name).read_text())["rows"]:
        out.setdefault(r["variant"], r["tflops"])
    return out


ab, ab1 = first_rows("h200-ab-fence.json"), first_rows("h200-ab-fence-64x128.json")
pack_clk = 138             # fa3's serial pack a block: Nsight Compute, results/h200-stall.json
pv_left_clk = (230, 430)   # own P·V left once the scores are in: instruments.trace --fence hoisted
rowmax_clk = {"fa3": 520, "ws_pingpong": 380}   # row-max chains a block beside the busy tensor core
paper_no_overlap, paper_fa3 = TAB2_REPORTED["ws_pingpong"], TAB2_REPORTED["fa3"]


def cycles(variant, fence, block_m=128, blocks=24):
    """One CTA over `blocks` K/V blocks, the kernel's 128-wide blocks, with or without the fence
    (as tests/model/test_overlap_fence.py runs it)."""
    import simpy

    from sim.attention import overlap, ws
    from sim.attention.cta import AttentionCTA
    from sim.cta import make_units
    from sim.hardware import H200
    from sim.trace import Trace
    cfg = attention.prepare(AttentionConfig(variant=variant, **shape, block_m=block_m, block_n=128,
                                            consumers=block_m // 64, stages=2), H200)
    env, trace = simpy.Environment(), Trace()
    cta = AttentionCTA(env, H200, cfg, trace, blocks, units=make_units(env, H200, trace))
    turns = variant == "fa3"
    roles = [ws.producer(cta)] if turns else []
    roles += [overlap.consumer(cta, w, producer=turns, turns=turns, fence=fence)
              for w in range(cfg.consumers)]
    env.run(until=simpy.AllOf(env, [env.process(r) for r in roles]))
    return env.now


model_nofence = cycles("fa3", fence=False) / cycles("fa3", fence=True) - 1
md(f"Then we measured what it buys on our H200, the same kernels with and without the fence in "
   f"one process (`python -m instruments.tools.ab_fence`, `results/h200-ab-fence*.json`): fa3 "
   f"{ab['fa3']:.0f} vs {ab['fa3 no fence']:.0f} TFLOP/s, `overlap` {ab['overlap']:.0f} vs "
   f"{ab['overlap no fence']:.0f}, and with one warpgroup per SM "
   f"{ab1['overlap'] / ab1['overlap no fence'] - 1:+.1%}. Why so little? The two builds trade: "
   f"without the fence the pack of P (32 F2FP a thread) issues among the exps; with it the pack "
   f"follows the softmax, serial (Nsight Compute's samples of the plain kernels, "
   f"`results/h200-stall.json`: {pack_clk} clk a block in fa3). And what is left of a warpgroup's "
   f"own P·V once its scores are in is only {pv_left_clk[0]}-{pv_left_clk[1]} clk "
   f"(`python -m instruments.trace --fence hoisted`). The model, given both schedules as compiled "
   f"(`sim/attention/overlap.py`'s `fence`) and a softmax slowed by the busy tensor core beside "
   f"it (`softmax_beside_mma`: fa3's row-max chains take ~{rowmax_clk['fa3']} clk a block, "
   f"~{rowmax_clk['ws_pingpong']} in `ws_pingpong`), agrees for `overlap` and still has fa3 "
   f"{model_nofence:.0%} slower without the fence (`tests/model/test_overlap_fence.py`); the "
   f"paper's ablation says {paper_no_overlap} → {paper_fa3} on an H100.")

# %% [markdown]
# Where the rest went is an open question of this course — a good one to
# take to the timelines of chapter 05.
#
# **Exercises** [`exercises/ch04_online_softmax`](../exercises/ch04_online_softmax/README.md): the
# online-softmax update — new max, the rescale factor for the old O and the old row sum — on fresh
# random data (watch the direction of the factor: FA3's alg. 1 prints its inverse); and
# [`exercises/ch04_tl_attention`](../exercises/ch04_tl_attention/README.md): one tile loop of
# attention as a Triton `tl` kernel, run under the interpreter on a CPU.
