# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
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

from course import hopper_gpu, md
from sim import gemm
from sim.config import GemmConfig
from sim.hardware import H200, H200_DATASHEET
from sim.plot import gantt
from sim.predict import predict

hw = H200_DATASHEET   # the timelines: datasheet rates (chapter 00), nothing measured

# %% [markdown]
# ## `sequential`: one slot
#
# With one slot the next block cannot be loaded until this one is multiplied, so every block pays
# a whole TMA round trip (latency plus transfer) with the tensor core idle. The model's GEMM CTA
# walks one 128×256 tile over 6 blocks of K = 64, on the `h200-datasheet` preset. The figure has one lane
# per unit of the SM that the CTA keeps busy — `unit: tma` (the copy engine: load A, load B, and
# at the end store C), `unit: tensor` (the MMAs), `unit: fma` (the epilogue's conversion of the
# fp32 accumulator) — and one lane per warpgroup (`consumer0`, `consumer1`) showing what it issued
# or, thin, how long it was waiting on a barrier.

# %%
def occupied(trace, span, unit="tensor"):
    """The share of `span` in which `unit`'s lane is drawn: its intervals, merged (a wgmma's
    math and the per-wgmma overhead both); `utilization` counts the math only."""
    gaps = sum(e - s for s, e in trace.idle_gaps(unit))
    return 1 - gaps / span


def timeline(variant, stages=None, k_blocks=6, title=None, hw=hw):
    cfg = gemm.prepare(GemmConfig(variant=variant, stages=stages), hw)
    clk, trace = gemm.simulate(cfg, hw, n_tiles=1, k_blocks=k_blocks)
    math, lane = trace.utilization(clk)["tensor"], occupied(trace, clk)
    assert math <= lane + 1e-9, "the math cannot outlast the lane it is drawn in"
    gantt(trace, title or f"{variant}, {cfg.stages} stage(s), {hw.name} preset: {clk:.0f} clk; "
                          f"tensor lane drawn {lane:.0%} of it, math {math:.0%}")
    return clk, trace


def round_trip(trace, block=1):
    """Block `block`'s first copy issued → its first MMA on the tensor core; and the tensor core's
    time on that block (all its MMAs, math and per-wgmma overhead) and its math alone."""
    ivs = [i for i in trace.intervals if i.tile == ("ab", block)]
    issued = min(i.start for i in ivs if i.unit == "tma")
    mma = [i for i in ivs if i.unit == "tensor"]
    return (min(i.start for i in mma) - issued, sum(i.length for i in mma),
            sum(i.work for i in mma))


t_seq, tr_seq = timeline("sequential")
rt, block_tensor, block_math = round_trip(tr_seq)
stage_bytes = (128 + 256) * 64 * 2
md(f"Each block's round trip — from the first copy issued to its first MMA — takes {rt:.0f} clk "
   f"in the model: the TMA latency ({hw.tma_latency_clk:.0f}), the {stage_bytes // 1024} KiB of "
   f"A and B at {hw.tma_rate:.0f} B/clk ({stage_bytes / hw.tma_rate:.0f}) and the mbarrier "
   f"hand-off to the waiting warps ({hw.mbarrier_clk:.0f}). Only then does the block's "
   f"{block_tensor:.0f} clk on the tensor core ({block_math:.0f} of math, the rest the "
   f"datasheet preset's per-wgmma overhead) begin.")

# %% [markdown]
# Blank space on the `tensor` lane is idle time. Each block is "load A, load B (TMA), wait,
# multiply". Now the same loop with a ring of 3 slots, refilled by the compute warps themselves
# (`pipelined`): the loads of the next blocks run under the current block's wgmmas.

# %%
t_pipe, _ = timeline("pipelined", stages=3)
md(f"`pipelined` takes {t_pipe:.0f} clk for the same six blocks, {t_seq / t_pipe:.2f}× faster "
   f"than `sequential`'s {t_seq:.0f}. The titles give two shares of the time: how much of it "
   f"the tensor lane is drawn (each wgmma, its math and the datasheet preset's per-wgmma "
   f"overhead) and how much is math, which is what *busy* means in the rest of the course "
   f"(`Trace.utilization`). Between the blocks the lane is solid; the overhead "
   f"({block_tensor - block_math:.0f} of every {block_tensor:.0f} clk a block) is the difference.")

# %% [markdown]
# ## How many stages?
#
# Each slot costs shared memory, and shared memory per block is limited; the model checks both
# (`check_gemm` in `sim/config.py`). Below, the whole-GPU prediction at 8192³ for 1 to 4 stages on
# two presets — `h200-datasheet` (datasheet rates, operands from L2) and `h200` (what our H200 measured:
# its operands stream from HBM, and each kernel runs at the clock its power cap allows) — beside
# what our H200 measured for the same kernels, and what the model says about a fifth stage.

# %%
from course import measured, say
from sim.plot import style

stages = [1, 2, 3, 4]
cfgs = [GemmConfig(variant="pipelined" if s > 1 else "sequential", stages=s) for s in stages]
pr = {h.name: [predict(c, h) for c in cfgs] for h in (H200_DATASHEET, H200)}
tf = {name: [p.tflops for p in ps] for name, ps in pr.items()}
res = measured("gemm")
meas = {}
if res is not None:
    for r in res["rows"]:
        if ((r["M"], r["N"], r["K"]) == (8192,) * 3 and r["dtype"] == "float16" and r.get("ok")
                and r["variant"] in ("sequential", "pipelined")):
            meas[r["stages"]] = r["tflops"]
fig, ax = plt.subplots(figsize=(5.5, 3.2))
for name in ("h200-datasheet", "h200"):
    ax.plot(stages, tf[name], label=f"model, {name} preset", **style(f"model {name}"))
if meas:
    ax.plot(sorted(meas), [meas[s] for s in sorted(meas)], label="measured, our H200",
            **style("measured"))
ax.set_xticks(stages)
ax.set_xlabel("ring stages")
ax.set_ylabel("TFLOP/s (8192³ fp16)")
peak = max(H200_DATASHEET.peak_tflops, H200.peak_tflops)
ax.axhline(H200_DATASHEET.peak_tflops, linewidth=1, **style("bound", "rule"))
ax.text(1, H200_DATASHEET.peak_tflops * 1.02,
        f"peak {H200_DATASHEET.peak_tflops:.0f} TFLOP/s at {H200_DATASHEET.clock_hz / 1e6:.0f} MHz",
        fontsize=7)
ax.set_ylim(0, 1.12 * peak)
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
for h in ("h200-datasheet", "h200"):
    print(f"model, {h} preset: " + ", ".join(f"{s} stage(s) {t:.0f}" for s, t in zip(stages, tf[h])))
if meas:
    print("measured, H200:     " + ", ".join(f"{s} stage(s) {meas[s]:.0f}" for s in sorted(meas)))
try:
    predict(GemmConfig(variant="pipelined", stages=5), hw)
    five = "5 stages: the model accepts them"
except ValueError as e:
    five = f"5 stages: {e}"
say(five)
c_tile = 128 * 256 * 2
md(f"A slot holds a 128×64 block of A and a 64×256 block of B in fp16: {stage_bytes // 1024} KiB. "
   f"Four slots take {4 * stage_bytes // 1024} KiB of the {hw.smem_per_block // 1024} KiB a block "
   f"may have, and the model accepts them: without a producer the K-loop is over before the "
   f"epilogue, so the {c_tile // 1024} KiB tile of C is staged in the ring's dead slots "
   f"(`kernels/gemm/pipelined.py` does the same, and our H200 ran it with 4 stages). A fifth slot "
   f"does not fit: {5 * stage_bytes // 1024} KiB — the model's error is printed above. A "
   f"warp-specialized kernel whose producer is already loading the next tile cannot reuse the ring "
   f"that way, and there the model counts the C tile on top.")

# %% [markdown]
# Why do two slots suffice on one preset and not on the other? With `s` slots, a block's copy is
# issued `s − 1` blocks ahead, so it has `s − 1` blocks of tensor work to land under: the ring
# hides the round trip when `(s − 1) ×` a block's tensor time is at least the round trip. The
# round trip is counted in SM clocks, and part of it is not: HBM's latency is a time. The
# whole-GPU prediction runs each configuration at the clock the power cap gives it, and a slower
# clock makes the same latency fewer clocks. So the rule is checked below at the clock each
# prediction ran at, against the share of time the tensor lane is drawn (math and per-wgmma
# overhead: `busy` counts only the math).

# %%
def cold_round_trip(h):
    """`round_trip` of block 1 in a `sequential` CTA alone on preset `h`, in SM clocks at `h`'s
    clock."""
    cfg = gemm.prepare(GemmConfig(variant="sequential"), h)
    return round_trip(gemm.simulate(cfg, h, n_tiles=1, k_blocks=6)[1])


busy = {name: [p.utilization["tensor"] for p in ps] for name, ps in pr.items()}
rule = {}
print(f"{'preset':15s} {'stages':>6s} {'GHz':>5s} {'round trip':>10s} {'(s−1) × tensor/block':>20s}"
      f"  {'':7s} {'lane':>5s} {'math':>5s}")
for h in (H200_DATASHEET, H200):
    for s, p in zip(stages[1:], pr[h.name][1:]):
        rt_s, block_s, block_math_s = cold_round_trip(h.with_(clock_hz=p.clock_hz))
        lane = p.utilization["tensor"] * block_s / block_math_s   # math → the lane drawn
        rule[h.name, s] = (p.clock_hz, rt_s, block_s, (s - 1) * block_s >= rt_s, lane)
        print(f"{h.name:15s} {s:6d} {p.clock_hz / 1e9:5.2f} {rt_s:6.0f} clk "
              f"{s - 1:7d} × {block_s:4.0f} = {(s - 1) * block_s:4.0f}  "
              f"{'hidden' if (s - 1) * block_s >= rt_s else 'exposed':7s} {lane:5.0%} "
              f"{p.utilization['tensor']:5.0%}")
# the rule and the model agree: hidden round trips leave the lane full, exposed ones do not
for key, (_, _, _, hidden, lane) in rule.items():
    assert hidden == (lane >= 0.97), (key, rule[key])
rt200, block200, _ = cold_round_trip(H200)
r2, r3 = rule["h200", 2], rule["h200", 3]
md(f"On the `h200-datasheet` preset a round trip is {rt:.0f} clk against {block_tensor:.0f} clk "
   f"of tensor work per block: one block does not quite cover it, two do (the tensor lane drawn "
   f"{rule['h200-datasheet', 2][4]:.0%} of the time with two slots, "
   f"{rule['h200-datasheet', 3][4]:.0%} with three; math {busy['h200-datasheet'][1]:.0%} and "
   f"{busy['h200-datasheet'][2]:.0%}, {tf['h200-datasheet'][1]:.0f} and "
   f"{tf['h200-datasheet'][2]:.0f} TFLOP/s). On the `h200` preset the operands come from HBM (a "
   f"copy's latency {H200.tma_hbm_latency_clk:.0f} clk at the preset's "
   f"{H200.clock_hz / 1e9:.2f} GHz, read off the traced GEMMs): the round trip of the cold CTA "
   f"above is {rt200:.0f} clk against {block200:.0f} of tensor work, and by that count even "
   f"three slots ({2 * block200:.0f} clk) would fall short. But the GEMM runs at its power cap: "
   f"the prediction gives two slots {r2[0] / 1e9:.2f} GHz, where the round trip is {r2[1]:.0f} "
   f"clk, over one block's {r2[2]:.0f}: exposed, the tensor cores do math "
   f"{busy['h200'][1]:.0%} of the time ({tf['h200'][1]:.0f} TFLOP/s); three slots keep the tensor "
   f"cores busier, so the clock drops to {r3[0] / 1e9:.2f} GHz, where the round trip is only "
   f"{r3[1]:.0f} clk, under two blocks' {2 * r3[2]:.0f}: hidden, math {busy['h200'][2]:.0%} "
   f"({tf['h200'][2]:.0f}) — as the machine went from {meas.get(2, float('nan')):.0f} to "
   f"{meas.get(3, float('nan')):.0f}. The rule is right at the clock the kernel runs at. Beyond "
   f"that, extra slots only absorb jitter: a fourth changes nothing in the model "
   f"({tf['h200'][3]:.0f}) and little on the machine ({meas.get(4, float('nan')):.0f}). Drag the "
   f"slider to see the timeline change (without widgets, the figures above are the same story).")

# %%
from course import explore


def show(stages):
    timeline("pipelined" if stages > 1 else "sequential", stages)   # draws; returns nothing


explore(show, stages=(1, 4, 1, 2))

# %% [markdown]
# ## The real kernels
#
# `kernels/gemm/sequential.py` and `kernels/gemm/pipelined.py` are the same two loops in Gluon:
# `tma.async_copy_global_to_shared` into a ring, `mbarrier.expect` + `mbarrier.wait(full[s],
# phase)`, `warpgroup_mma`. Below, the model's `pipelined` consumer beside the kernel, both read
# from their files; the cell checks that they take the same steps in the same order: acquire the
# slot, issue the wgmma, wait for the one before (`warpgroup_mma_wait(1)`), meet the other
# warpgroup at a barrier, and refill the freed slot.

# %%
from course import beside, in_order

beside("sim.gemm.pipelined:consumer", "kernels.gemm.pipelined:consumer")
for side in ("sim.gemm.pipelined:consumer", "kernels.gemm.pipelined:consumer"):
    in_order(side, [r"acquire\(", r"\.mma\(", r"wait_mma\(", r"release\("])
in_order("sim.gemm.pipelined:release", [r"sync_consumers\(", r"\.load\("])
in_order("kernels.gemm.pipelined:InlineRing.release", [r"thread_barrier\(", r"\.load\("]);

# %% [markdown]
# On a Hopper GPU with the kernels' requirements the next cell times both kernels live beside
# cuBLAS; elsewhere it says what that needs and plots what our H200 measured
# (`results/h200.json`, same run as cuBLAS).

# %%
from course import gemm_ladder

best = gemm_ladder(["sequential", "pipelined"])
if best:
    # the ring depth each variant's best measurement ran (committed rows), and the model there
    best_stages = {v: max((r for r in (res or {}).get("rows", []) if r.get("variant") == v
                           and (r["M"], r["N"], r["K"]) == (8192,) * 3 and r["dtype"] == "float16"
                           and r.get("ok")), key=lambda r: r["tflops"], default={}).get("stages")
                   for v in ("sequential", "pipelined", "cublas")}
    best_stages = {v: st or {"sequential": 1, "pipelined": 3}.get(v) for v, st in best_stages.items()}
    names = [n for n in ("sequential", "pipelined", "cublas") if n in best]
    model = {v: tf["h200"][best_stages[v] - 1] for v in ("sequential", "pipelined")}
    fig, ax = plt.subplots(figsize=(5, 3))
    for series, label in (("measured", "our kernels, measured"), ("peer", "cuBLAS, measured")):
        drawn = [n for n in names if (n == "cublas") == (series == "peer")]
        ax.bar(drawn, [best[n] for n in drawn], label=label, **style(series, "bars"))
    ax.plot([n for n in names if n in model], [model[n] for n in names if n in model],
            markersize=8, zorder=3, label="model, h200 preset", **style("model h200", "points"))
    ax.set_ylabel("TFLOP/s (8192³ fp16)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    say(f"model, h200 preset, at the measured ring depths: " + ", ".join(
        f"{v} ({best_stages[v]} stage(s)) {model[v]:.0f}" for v in model))
    rows = {v: max((r for r in (res or {}).get("rows", []) if r.get("variant") == v
                    and (r["M"], r["N"], r["K"]) == (8192,) * 3 and r["dtype"] == "float16"
                    and r.get("ok")), key=lambda r: r["tflops"], default=None)
            for v in ("pipelined", "cublas")}
    if all(rows.values()) and not hopper_gpu():
        pip, cub = rows["pipelined"], rows["cublas"]
        overlap = pip["tflops_min"] <= cub["tflops_max"] and cub["tflops_min"] <= pip["tflops_max"]
        md(f"The model is the `h200` preset, at the ring depth each kernel ran: "
           f"{model['sequential']:.0f} against {best['sequential']:.0f} TFLOP/s for `sequential`, "
           f"{model['pipelined']:.0f} against {best['pipelined']:.0f} for `pipelined`. "
           f"And `pipelined` ({pip['tflops']:.0f} TFLOP/s, rounds {pip['tflops_min']:.0f}-"
           f"{pip['tflops_max']:.0f}) is level with cuBLAS ({cub['tflops']:.0f}, rounds "
           f"{cub['tflops_min']:.0f}-{cub['tflops_max']:.0f})"
           + (": the rounds overlap, a tie, not a win. " if overlap else ". ")
           + f"At 8192³ neither is limited by its schedule: both keep the tensor cores fed "
           f"(the model has `pipelined` busy {busy['h200'][best_stages['pipelined'] - 1]:.0%} of "
           f"the time) and both run at the {float(res['environment']['power_limit'].split()[0]):.0f}"
           f" W power cap (they drew {pip['power_w']:.0f} and {cub['power_w']:.0f} W), so the "
           f"clock the cap allows sets both. cuBLAS's advantage is elsewhere — every shape, "
           f"dtype and layout, tuned; on one large square GEMM a plain ring of three or four stages is enough.")

# %% [markdown]
# **Exercise** [`exercises/ch01_ring`](../exercises/ch01_ring/README.md): one ring for K and V,
# streamed in the order chapter 04's overlap reads them — K_0, then K_j just before V_{j-1}, and
# V_{n-1} last — and its bookkeeping: the slot of each tile, the parity the consumers wait for on
# `full` and the producer on `empty`. A tile's place in this stream depends on j and on the number
# of blocks, so the rule above applies to its position, not to j. The grader runs a CTA in the
# model on your answers, with rings of 2 to 4 stages and many laps, and reads its event log.
