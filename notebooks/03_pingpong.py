# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 — Pingpong: two consumers take turns on the tensor core
#
# **Question.** Each consumer warpgroup alternates GEMMs (tensor core) and softmax (SFU, FMA pipe).
# With two consumers, can one's softmax always run under the other's GEMMs?
#
# **The idea.** Order them. Consumer w waits for *its turn* before issuing its GEMMs and passes the
# turn on afterwards (FA3 §3.1, fig. 1). Two GEMMs issued together share the tensor core
# instruction by instruction and *both* finish late; two softmaxes together share the SFU and both
# take twice as long. Turns keep them out of each other's way. The turns are mbarriers here
# (Gluon has no named barriers); FA3's CUDA uses `bar.sync` with named barrier ids.

# %%
from course import md
from sim.config import AttentionConfig, GemmConfig
from sim.hardware import H100, H200
from sim.paper import SEC31, SEC31_REPORTED
from sim.plot import PALETTE, gantt, kind, steady_window
from sim.predict import predict

hw = H100
shape = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}

# %% [markdown]
# ## Attention: `ws` vs `ws_pingpong`

# %%
preds = {v: predict(AttentionConfig(variant=v, **shape), hw, keep_trace=True)
         for v in ("ws", "ws_pingpong")}
for v, p in preds.items():
    print(f"{v:12s} {p.tflops:5.0f} TFLOP/s   tensor {p.utilization['tensor']:.0%}   "
          f"SFU {p.utilization['sfu']:.0%}")
gantt(preds["ws_pingpong"].trace, "ws_pingpong (steady state)",
      steady_window(preds["ws_pingpong"].trace, 0.1), clock_hz=hw.clock_hz);

# %% [markdown]
# Change the head dim and the K/V block and watch the alternation hold or break (the model refuses
# tiles that do not fit the registers or shared memory, and says why):

# %%
from course import explore


def pingpong_at(headdim, block_n):
    try:
        p = predict(AttentionConfig(variant="ws_pingpong", batch=2, heads=2048 // headdim,
                                    seqlen=4096, headdim=headdim, block_n=block_n), hw,
                    keep_trace=True)
    except ValueError as e:
        print(e)
        return
    gantt(p.trace, f"ws_pingpong, d {headdim}, block_n {block_n}: {p.tflops:.0f} TFLOP/s",
          steady_window(p.trace, 0.1), clock_hz=hw.clock_hz)
    import matplotlib.pyplot as plt
    plt.show()


explore(pingpong_at, headdim=(64, 256, 64, 128), block_n=(64, 256, 16, 176))

# %% [markdown]
# The lanes, top to bottom: the units (`tma`, the copy engine, loading K and V; `tensor`; `sfu`,
# the exps; `fma`, the FP32 pipe with the softmax's scale and sum, the rescale of O and the pack of
# P; `lsu`, the warps' own loads and stores, here only O's way out at the very end, so it stays
# blank inside this window), then the warpgroups. Full-height bars are a unit at work, half-height
# ones a warpgroup waiting on its own dependent chain, thin ones a wait on a barrier or a turn.
#
# In `ws_pingpong` the consumer lanes alternate: consumer 0's *QKᵀ (wgmma)* and *PV (wgmma)* while
# consumer 1 does its softmax — *softmax: row max (latency)*, a dependent chain that waits on its
# own latency, then *softmax: exp (SFU)* with *softmax: scale, sum (FMA)* beside it and a
# *softmax: dependency stall* at its end — then the other way round. The row max and the stall
# occupy no unit, which is exactly why another warpgroup's GEMMs can fill them; the price is that a
# softmax beside a busy tensor core runs slower (chapter 04, "The real kernel").

# %%
paper_ws, paper_pp = SEC31_REPORTED["ws"][0], SEC31_REPORTED["ws_pingpong"]  # FA3 §3.1
sec31 = {v: predict(AttentionConfig(variant=v, **SEC31), hw) for v in ("ws", "ws_pingpong")}
model_gain = sec31["ws_pingpong"].tflops / sec31["ws"].tflops - 1
md(f"**What the model says, and where it is unsure.** The paper measures pingpong's gain at "
   f"{paper_pp[0] / paper_ws - 1:+.0%} to {paper_pp[1] / paper_ws - 1:+.0%} ({paper_ws} → "
   f"{paper_pp[0]}-{paper_pp[1]} TFLOP/s, §3.1). The model, at the same shape, gives "
   f"{model_gain:+.1%} ({sec31['ws'].tflops:.0f} → {sec31['ws_pingpong'].tflops:.0f}), because "
   f"in the model two consumers left alone already drift into alternation (see `ws` in chapter "
   f"02); on the real machine they evidently don't. How the tensor core arbitrates between two "
   f"warpgroups' queued wgmmas is not published; `sim/README.md` lists the rules one could "
   f"choose. Chapter 05 lays the model's lanes under the Proton timelines of the real kernels, "
   f"the evidence to hold it to.")

# %% [markdown]
# ## GEMM: pingpong hides the epilogue
#
# In a GEMM the "softmax" is the epilogue: convert the accumulators, store the tile. In the
# cooperative `ws` kernel both consumers reach it together and the tensor core waits; in
# `ws_pingpong` each consumer owns its own tile and stores it under the other's K-loop. The
# epilogue matters when K is short. The GEMMs are modelled on the `h200` preset, the card their
# kernels were measured on: its constants are measured, and its clock follows the card's power
# cap (`fidelity/README.md`); the `h100` preset's fitted per-wgmma overhead stands in for losses a
# GEMM does not have.

# %%
import matplotlib.pyplot as plt

import math

ks = [256, 512, 1024, 1536, 2048, 4096]
rows = {v: [predict(GemmConfig(variant=v, m=8192, n=8192, k=k), H200).tflops for k in ks]
        for v in ("ws", "ws_pingpong")}
gain = {k: pp / ws - 1 for k, ws, pp in zip(ks, rows["ws"], rows["ws_pingpong"])}
# where the gain changes sign: linear in log2 K between the two K that bracket it
k_cross = next((2 ** (math.log2(a) + ga / (ga - gb) * (math.log2(b) - math.log2(a)))
                for (a, ga), (b, gb) in zip(gain.items(), list(gain.items())[1:])
                if ga > 0 >= gb), None)
fig, ax = plt.subplots(figsize=(5.5, 3))
for v, tf in rows.items():
    ax.plot(ks, tf, "o-", label=v)
if k_cross:
    ax.axvline(k_cross, color="black", linewidth=0.6, linestyle=":")
ax.set_xscale("log", base=2)
ax.set_xlabel("K (M = N = 8192)")
ax.set_ylabel("model TFLOP/s")
ax.legend()
fig.tight_layout()
plt.show()
for k, g in gain.items():
    print(f"K = {k:5d}: ws_pingpong {g:+.1%} against ws")


# %%
def tile_traffic(bm, bn, bk=64, el=2):
    """(bytes of A and B, FLOP) of one k-step of a bm×bn tile."""
    return (bm + bn) * bk * el, 2 * bm * bn * bk


(pp_b, pp_f), (ws_b, ws_f) = tile_traffic(192, 128), tile_traffic(128, 256)
md(f"The model shows the hidden epilogue where K is short: at K = {ks[0]} a tile is only "
   f"{ks[0] // 64} k-steps, the cooperative kernel's tensor cores wait through every epilogue, and "
   f"pingpong is {gain[ks[0]]:+.1%} ahead; at K = 1024 it is {gain[1024]:+.1%}. The lines cross "
   f"near K ≈ {k_cross:.0f}: from K = {min(k for k, g in gain.items() if g <= 0)} on `ws` is "
   f"ahead ({gain[ks[-1]]:+.1%} at K = {ks[-1]}), the epilogue a rounding error. The price of "
   f"pingpong is its tile: each consumer's 192×128 tile moves {pp_b / 1024:.0f} KiB of A and B "
   f"per {pp_f / 1e6:.1f} MFLOP a k-step, against {ws_b / 1024:.0f} KiB per {ws_f / 1e6:.1f} MFLOP "
   f"for the cooperative 128×256 tile (look at `utilization['tma']`), and the model charges those "
   f"bytes in clock, under the power cap. Tile shape is a trade, not a detail.")
#
# ## The real kernel
#
# `kernels/gemm/ws_pingpong.py`: two consumer warpgroups, each with its own output tile, and two
# `turn` mbarriers; consumer w waits on `turn[w]` before its K-loop and arrives on the other's when
# its last wgmmas are issued. Its tile is 192×128: three row blocks of 64, each its own m64n128
# wgmma accumulator, because a warpgroup holds its whole accumulator in registers (192×128 fp32 is
# 192 registers a thread, the most that fits in 240) and Gluon tensors are powers of two.
# Measured numbers are in `results/h200.json`.
#
# ### The schedule beside its kernel
#
# The model's consumer and the kernel's are written with the same step names in the same order.
# `fidelity.pairs.steps` reads each function's source and lists the calls to those steps, loop by
# loop; here are the two listings of the pingpong GEMM side by side (Python's `difflib`: a changed
# line would be marked). `tests/model/test_pairs.py` holds every paired schedule to its kernel
# this way.

# %%
from IPython.display import HTML

from fidelity.pairs import attention_pairs, diff_table, gemm_pairs, steps


def side_by_side(pair, model_name, kernel_name):
    model, model_switches, kernel, kernel_switches = pair
    return HTML(diff_table(steps(model, **model_switches), steps(kernel, **kernel_switches),
                           model_name, kernel_name))


side_by_side(gemm_pairs()["ws_pingpong"], "sim/gemm/ws_pingpong.py: consumer",
             "kernels/gemm/ws_pingpong.py: consumer")

# %% [markdown]
# The attention pair: `sim/attention/ws_pingpong.py` beside `kernels/attention/ws.py`'s consumer
# compiled with `TURNS` (the switch decides its `if TURNS:` lines). The turn is waited for right
# before Q·Kⱼᵀ and passed on as soon as it is issued; everything after it runs under the other
# warpgroup's GEMMs.

# %%
side_by_side(attention_pairs()["ws_pingpong"], "sim/attention/ws_pingpong.py: consumer",
             "kernels/attention/ws.py: consumer, TURNS")

# %%
from course import gemm_ladder, measured

gemm_ladder(["ws", "ws_pingpong"]);

# %%
import json

from course import RESULTS

first_kstep_clk, first_wait_full = 556, 0.21   # the first, 128×128 pingpong's trace (lab notebook)
summ = {v: json.loads((RESULTS / "traces" / f"gemm_{v}.summary.json").read_text())
        for v in ("ws", "ws_pingpong")}
rate = H200.tensor_flop_per_clk
b128, f128 = tile_traffic(128, 128)
md(f"### What the H200 said\n\nThe first pingpong kernel used 128×128 tiles and lost to `ws` at "
   f"every K. Its Proton timeline showed why: a 64-deep k-step took {first_kstep_clk} SM clocks "
   f"for {f128 / rate:.0f} clocks of math, with the consumers waiting for data "
   f"{first_wait_full:.0%} of the time. A 128×128 k-step reads {b128 / 1024:.0f} KiB of A and B "
   f"for {f128 / 1e6:.1f} MFLOP ({f128 / b128:.0f} FLOP per byte); at the tensor cores' rate "
   f"that is {b128 / (f128 / rate):.0f} bytes a clock per SM from L2, more than the card "
   f"delivered. The 192×128 tile reads {pp_b / 1024:.0f} KiB for {pp_f / 1e6:.1f} MFLOP "
   f"({pp_f / pp_b:.0f} FLOP per byte), and its traced k-step runs at "
   f"{summ['ws_pingpong']['period_clk']:.0f} clocks for {pp_f / rate:.0f} of math. Across K, "
   f"with both kernels timed in the same interleaved rounds:")

# %%
res = measured("gemm")
if res is not None:
    by_shape: dict = {}
    for r in res["rows"]:
        if r["variant"] in ("ws", "ws_pingpong") and r["dtype"] == "float16" and r.get("ok") \
                and not r.get("tile_override") and r.get("persistent") and "tflops" in r:
            key = (r["M"], r["N"], r["K"])
            best = by_shape.setdefault(key, {})
            best[r["variant"]] = max(best.get(r["variant"], 0.0), r["tflops"])
    shapes = sorted((k for k, v in by_shape.items() if len(v) == 2 and k[0] >= 8192),
                    key=lambda k: (k[2], k[0]))
    for M, N, K in shapes:
        ws_tf, pp_tf = by_shape[(M, N, K)]["ws"], by_shape[(M, N, K)]["ws_pingpong"]
        print(f"{M}×{N}×{K:<6d} ws {ws_tf:5.0f}  ws_pingpong {pp_tf:5.0f}  ({pp_tf / ws_tf - 1:+.1%})")

# %%
def tiles(m, n, bm, bn):
    return math.ceil(m / bm) * math.ceil(n / bn)


sms = H200.sms
g = {k: v["ws_pingpong"] / v["ws"] - 1 for k, v in by_shape.items() if len(v) == 2}
mid_k = [g[(8192, 8192, k)] for k in (1024, 2048) if (8192, 8192, k) in g]
big = tiles(8192, 4096, 192, 128)
small_pp, small_ws = tiles(2048, 2048, 192, 128), tiles(2048, 2048, 128, 256)
# the traces' clocks: cycles over wall time; a CTA's tiles × the tile period (pingpong: two
# consumers, one tile each per period)
clock = {v: s["clock_ghz_estimate"] for v, s in summ.items()}
cyc_ws = math.ceil(tiles(8192, 8192, 128, 256) / sms) * summ["ws"]["tile_period_clk"]
cyc_pp = (math.ceil(tiles(8192, 8192, 192, 128) / sms)
          * summ["ws_pingpong"]["tile_period_clk"] / 2)
l2 = {"ws_pingpong": pp_b / pp_f * 1e3, "ws": ws_b / ws_f * 1e3}       # bytes per kFLOP
sm_reads = {"ws_pingpong": (2 + 4) * 1024 / (2 * 64 * 128 * 16) * 1e3,    # m64n128k16: A 2, B 4 KiB
            "ws": (2 + 8) * 1024 / (2 * 64 * 256 * 16) * 1e3}             # m64n256k16: A 2, B 8 KiB
md(f"A tie, not a win. In this run the two are {g[(8192, 8192, 8192)]:+.1%} apart at 8192³, and "
   f"at K = 1024–2048 pingpong is {min(mid_k):+.1%} to {max(mid_k):+.1%} against `ws` — where "
   f"the model above promises {gain[1024]:+.1%} at K = 1024 and puts the crossover near "
   f"K ≈ {k_cross:.0f}. `results/lab-notebook.md` keeps an earlier run in which pingpong led at "
   f"K = 1024–2048 and trailed at 8192³: run to run, the sign moves. (8192×4096×16384 is behind "
   f"for another reason: {big} tiles of 192×128 are {big / sms:.1f} per SM, so the last round "
   f"runs {big / sms % 1:.0%} full.) Pingpong does hide the epilogue — by the traces' cycle "
   f"counts (a CTA's tiles × the traced tile period) it needs {1 - cyc_pp / cyc_ws:.1%} fewer "
   f"clocks than `ws` for the same 8192³ GEMM — but every one of these rows ran at the card's "
   f"{float(res['environment']['power_limit'].split()[0]):.0f} W power cap, where the clock is set by the energy each FLOP costs. And pingpong moves "
   f"more bytes per FLOP: by its tile, {l2['ws_pingpong']:.1f} bytes from L2 per kFLOP against "
   f"{l2['ws']:.1f}, and {sm_reads['ws_pingpong']:.1f} bytes of shared-memory reads by the "
   f"tensor cores against {sm_reads['ws']:.1f} (a m64n128k16 wgmma reads 2 KiB of A and 4 KiB "
   f"of B for 262 kFLOP; the cooperative tile's m64n256k16 reads 2 + 8 KiB for twice the work). "
   f"The traces (recorded in different runs) agree: {clock['ws_pingpong']:.3f} GHz for "
   f"pingpong, {clock['ws']:.3f} for `ws`. What would tip it — two CTAs of a cluster sharing one "
   f"operand through TMA multicast, as CUTLASS's pingpong kernels do — is not in Gluon 3.6's "
   f"Hopper API. On small problems pingpong loses outright: 2048×2048 has {small_pp} tiles of "
   f"192×128 for {sms} SMs, so {small_pp - sms} SMs do two tiles while `ws` gives every SM at "
   f"most one ({small_ws} tiles of 128×256). In attention the picture is different: there the "
   f"softmax leaves the tensor cores idle for real, and pingpong pays (chapter 05).")

# %% [markdown]
# **Exercise** [`exercises/ch03_pingpong`](../exercises/ch03_pingpong/README.md): add the turn
# barriers to a two-consumer schedule so that the consumers' Q·Kᵀ never overlap on the tensor
# core — the grader runs your schedule in the model and checks the tensor lane.
