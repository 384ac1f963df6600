"""O's rescale beside its own Q·Kᵀ: how fast do a warpgroup's FMULs issue while the tensor core
runs the wgmmas that warpgroup has just queued?

fa3 with ``rescale_early`` at head dim 256 (``kernels/attention/overlap.py``; its SASS, compiled
on the CPU) issues Q·K_jᵀ as 16 SS ``wgmma.mma_async m64n64k16`` — Q 64 x 256 and K 64 x 256 in
shared memory, each instruction a different 16-column k-slice — and then, before it issues P·V,
rescales its O accumulator (64 x 256 fp32: 128 registers a thread) by the last block's
correction: 128 independent FMULs a thread, nothing else among them. How long those FMULs take
beside the draining Q·Kᵀ decides what the switch costs; nothing had measured FMULs there.

One warpgroup (``num_warps`` 4) per SM, one CTA per SM (``common.occupy_smem``). Each of
``ITERS`` iterations, with ``%clock64`` read between the steps::

    t0 | issue Q·Kᵀ (one warpgroup_mma over KD = 256: 16 m64n64k16, as steps.py's qk) | t1
       | O *= alpha (one FMUL per O element: 128 a thread)                              | t2
       | warpgroup_mma_wait(0)                                                          | t3

``MODE`` ``FMUL_AFTER_QK`` runs all three; ``FMUL_ALONE`` leaves out the wgmmas (the FMULs with
the tensor core idle: the reference for their slowdown); ``QK_ALONE`` leaves out the FMULs (the
group's issue-to-done with nothing beside it: whether the FMULs delay the tensor core). Per
iteration and CTA the three spans are summed on the device; a row gives the medians over CTAs of
their means: ``issue_clk`` (t1 − t0), ``fmul_clk`` (t2 − t1), ``wait_clk`` (t3 − t2), and
``group_clk`` (t3 − t0).

The clock read after the FMULs follows the last FMUL's *issue*; the FMULs are independent, so
their retire is a few clk (one FMUL's latency) later — small beside the ~130-390 clk at stake.
The SASS test (``tests/instruments/test_micro_compile.py``) checks the order the spans assume:
clock, 16 HGMMA, clock, 128 FMUL, clock, the wait, clock — ptxas moves no FMUL among the wgmmas.

Check: S after ``n`` iterations is ``n · Q @ Kᵀ`` (fp32 against float64, rel. err < 1e-3; inputs
``randn · 0.1``) and O is ``O₀ · alphaⁿ`` row by row (rel. err < 1e-5), from the short check run;
the timed run must leave O finite.
"""
from __future__ import annotations

import math

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from . import common
from .common import clock64, globaltimer, occupy_smem, record, smid
from .operands import BM, INSTR, KD, filled
from .wgmma import acc_layout

SEED = 29
BN = 64                       # K rows of one block: fa3's tile at head dim 256 (128 x 64)
ITERS = 500
CHECK_ITERS = 4
FMUL_AFTER_QK, FMUL_ALONE, QK_ALONE = 0, 1, 2
MODES = {FMUL_AFTER_QK: "FMULs after Q·Kᵀ", FMUL_ALONE: "FMULs alone", QK_ALONE: "Q·Kᵀ alone"}
FMULS_PER_THREAD = BM * KD // 128   # O's elements over the warpgroup's 128 threads
SPANS = ("issue", "fmul", "wait")
ROWS, KDIM, NCOLS = (gl.constexpr(v) for v in (BM, KD, BN))
AFTER_QK, ALONE, QK_ONLY = (gl.constexpr(v) for v in (FMUL_AFTER_QK, FMUL_ALONE, QK_ALONE))


@gluon.jit
def tile_offsets(C: gl.constexpr, layout: gl.constexpr):
    """Row-major offsets of a ROWS x C tile held in ``layout``, and its row index."""
    r = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    c = gl.arange(0, C, gl.SliceLayout(0, layout))
    return gl.expand_dims(r, 1) * C + gl.expand_dims(c, 0), r


@gluon.jit
def rescale_kernel(q_ptr, k_ptr, o_ptr, alpha_ptr, s_out_ptr, o_out_ptr, spans_ptr, stats_ptr,
                   iters, MODE: gl.constexpr, num_warps: gl.constexpr):
    q_s = filled(q_ptr, ROWS, KDIM, num_warps)        # Q: 64 x 256
    k_s = filled(k_ptr, NCOLS, KDIM, num_warps)       # K: 64 x 256, K-major as in the kernel
    occupy_smem(num_warps)  # one CTA per SM (allocated after Q, K: it cannot alias them)
    fence_async_shared()  # generic-proxy stores -> visible to the tensor cores
    gl.thread_barrier()
    s_l: gl.constexpr = acc_layout(NCOLS, num_warps)
    o_l: gl.constexpr = acc_layout(KDIM, num_warps)
    o_off, rows = tile_offsets(KDIM, o_l)
    o = gl.load(o_ptr + o_off)                        # O: 64 x 256 fp32, wgmma's layout
    alpha = gl.expand_dims(gl.load(alpha_ptr + rows), 1)
    s = gl.zeros([ROWS, NCOLS], gl.float32, s_l)
    t_start = clock64(0)
    issue = t_start - t_start                         # the spans' sums (int64)
    fmul = issue
    wait = issue
    g_start = globaltimer(0)
    for i in range(iters):
        t0 = clock64(0)
        if MODE != ALONE:   # S = Q Kᵀ: 16 m64n64k16 walking the k-slices (steps.py's qk)
            s = warpgroup_mma(q_s, k_s.permute((1, 0)), s, is_async=True)
        t1 = clock64(0)
        if MODE != QK_ONLY:
            o = o * alpha                              # O *= alpha: 128 FMULs a thread
        t2 = clock64(0)
        if MODE != ALONE:
            s = warpgroup_mma_wait(0, deps=(s,))
        t3 = clock64(0)
        issue += t1 - t0
        fmul += t2 - t1
        wait += t3 - t2
    t_end = clock64(0)
    g_end = globaltimer(0)
    record(stats_ptr, t_start, t_end, g_start, g_end, smid(0))
    pid = gl.program_id(0)
    gl.store(spans_ptr + pid * 3 + 0, issue)
    gl.store(spans_ptr + pid * 3 + 1, fmul)
    gl.store(spans_ptr + pid * 3 + 2, wait)
    if pid == 0:
        s_off, _ = tile_offsets(NCOLS, s_l)
        gl.store(s_out_ptr + s_off, s)
        gl.store(o_out_ptr + o_off, o)


def compile_sm90(mode: int = FMUL_AFTER_QK):
    return common.compile_sm90(
        rescale_kernel,
        {"q_ptr": "*fp16", "k_ptr": "*fp16", "o_ptr": "*fp32", "alpha_ptr": "*fp32",
         "s_out_ptr": "*fp32", "o_out_ptr": "*fp32", "spans_ptr": "*i64", "stats_ptr": "*i64",
         "iters": "i32"},
        {"MODE": mode}, num_warps=4)


def reference(q, k, o, alpha, mode: int, iters: int):
    """(S, O) after ``iters`` iterations of ``mode``, in float64."""
    s = iters * (q.double() @ k.double().T) if mode != FMUL_ALONE else q.new_zeros(BM, BN).double()
    o = o.double() * alpha.double()[:, None] ** iters if mode != QK_ALONE else o.double()
    return s, o


def _rel(x, ref) -> float:
    if not ref.abs().max() > 0:
        return float((x.double() - ref).abs().max())
    err = float((x.double() - ref).norm() / ref.norm())
    return float("inf") if math.isnan(err) else err


def run(mode: int, gen, iters: int = ITERS, grid: int | None = None) -> dict:
    """Check (``CHECK_ITERS`` iterations against float64), then one timed run on every SM."""
    import torch

    from .common import cta_stats, median

    dev = common.DEVICE
    grid = grid or common.sm_count()
    q = (torch.randn(BM, KD, device=dev, generator=gen) * 0.1).half()
    k = (torch.randn(BN, KD, device=dev, generator=gen) * 0.1).half()
    o = torch.randn(BM, KD, device=dev, generator=gen)
    # near 1, so that O neither overflows nor flushes to zero over the timed run
    alpha = 1.0 + 1e-3 * torch.randn(BM, device=dev, generator=gen)

    def launch(n: int):
        s_out = torch.full((BM, BN), float("nan"), device=dev)
        o_out = torch.full((BM, KD), float("nan"), device=dev)
        spans = torch.full((grid, 3), -1, dtype=torch.int64, device=dev)
        stats = common.stats_buffer(grid)
        rescale_kernel[(grid,)](q, k, o, alpha, s_out, o_out, spans, stats, n, MODE=mode,
                                num_warps=4)
        common.sync()
        return s_out, o_out, spans, stats

    s_out, o_out, _, _ = launch(CHECK_ITERS)
    s_ref, o_ref = reference(q, k, o, alpha, mode, CHECK_ITERS)
    s_err, o_err = _rel(s_out, s_ref), _rel(o_out, o_ref)
    row = {"bench": "rescale", "mode": MODES[mode], "instr_per_group": INSTR,
           "fmuls_per_thread": FMULS_PER_THREAD, "iters": iters, "grid": grid,
           "s_rel_err": s_err, "o_rel_err": o_err, "ok": s_err < 1e-3 and o_err < 1e-5}
    if not row["ok"]:
        return row
    launch(2)  # warm-up (compiled already)
    _, o_out, spans, stats = launch(iters)
    st = cta_stats(stats)
    per = spans.cpu().double() / iters
    row.update({f"{n}_clk": median(per[:, i]) for i, n in enumerate(SPANS)})
    row.update(group_clk=median(per.sum(dim=1)), cycles_median=median(st["cycles"]),
               one_cta_per_sm=st["one_cta_per_sm"], stats_written=st["written"],
               spans_written=bool((spans >= 0).all()),
               o_finite=bool(torch.isfinite(o_out).all()),
               clock_hz=float((st["cycles"] / st["ns"]).median()) * 1e9)
    if mode != QK_ALONE:
        row["fmul_lanes_per_clk"] = BM * KD / row["fmul_clk"]
    row["ok"] = (row["ok"] and st["written"] and st["one_cta_per_sm"] and row["spans_written"]
                 and row["o_finite"])
    return row


def rows(gen) -> list[dict]:
    out = [run(m, gen) for m in MODES]
    by = {r["mode"]: r for r in out}
    beside, alone = by[MODES[FMUL_AFTER_QK]], by[MODES[FMUL_ALONE]]
    if beside["ok"] and alone["ok"]:  # what the FMULs lose beside the draining Q·Kᵀ
        beside["fmul_slowdown"] = beside["fmul_clk"] / alone["fmul_clk"]
        qk = by[MODES[QK_ALONE]]
        if qk["ok"]:  # and what the tensor core loses to them: issue to done, with and without
            beside["group_delay_clk"] = beside["group_clk"] - qk["group_clk"]
    return out


def line(r: dict) -> str:
    if "fmul_clk" not in r:
        return (f"{r['mode']:18s} ok={r['ok']} S rel_err={r['s_rel_err']:.2e} "
                f"O rel_err={r['o_rel_err']:.2e}")
    text = (f"{r['mode']:18s} ok={r['ok']} issue {r['issue_clk']:6.1f}  FMULs {r['fmul_clk']:6.1f}"
            f"  wait {r['wait_clk']:6.1f}  group {r['group_clk']:6.1f} clk")
    if "fmul_slowdown" in r:
        text += f"  FMULs x{r['fmul_slowdown']:.2f} of alone"
    if "group_delay_clk" in r:
        text += f", Q·Kᵀ {r['group_delay_clk']:+.1f} clk"
    return text


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "h200-rescale.json", SEED, rows, line))
