"""wgmma rate: back-to-back ``wgmma.mma_async`` m64nNk16 from shared memory.

One CTA per SM. Each warpgroup of the CTA (1 or 2: ``num_warps`` 4 or 8) owns 64 rows of the
accumulator and issues, ``ITERS x UNROLL`` times, one m64nNk16 with A (64 x 16) and B (16 x N)
both in shared memory, accumulating into the same registers -- the main loop of a GEMM with the
copies taken away. After each issue it waits until at most ``WAIT`` wgmma groups are pending:
``WAIT = 1`` is how the course's kernels run (the next wgmma queued behind the running one),
``WAIT = 0`` exposes each instruction's whole latency.

Timing: ``%clock64`` around the loop, per CTA (and ``%globaltimer``, which the clock benchmark
uses). Per SM: FLOP/clk = ITERS·UNROLL·2·BM·N·16 / cycles; per instruction of one warpgroup
``cycles / (ITERS·UNROLL·WGS)`` clk (the warpgroups share the SM's tensor cores), of which
``N/2`` is the math at 4096 FLOP/clk; with ``WAIT = 1`` the rest is the queued per-instruction
overhead (0.0 clk on the H200), with ``WAIT = 0`` the model's ``wgmma_latency_clk``.

Check: the accumulator after ``n`` issues is ``n · A @ B`` (fp32), against float64.
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

K_STEP = 16  # one wgmma's K for fp16/bf16


@gluon.constexpr_function
def acc_layout(N, num_warps):
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, N, 16])


@gluon.constexpr_function
def smem_layout(shape, dtype):
    return gl.NVMMASharedLayout.get_default_for(list(shape), dtype)


@gluon.jit
def load_2d(ptr, R: gl.constexpr, C: gl.constexpr, num_warps: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [num_warps, 1], [1, 0])
    r = gl.arange(0, R, gl.SliceLayout(1, layout))
    c = gl.arange(0, C, gl.SliceLayout(0, layout))
    return gl.load(ptr + gl.expand_dims(r, 1) * C + gl.expand_dims(c, 0))


@gluon.jit
def wgmma_rate_kernel(a_ptr, b_ptr, out_ptr, stats_ptr, iters, N: gl.constexpr,
                      UNROLL: gl.constexpr, WAIT: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = 16 * num_warps  # 64 rows per warpgroup
    BK: gl.constexpr = 16
    dtype: gl.constexpr = a_ptr.dtype.element_ty
    a_s = gl.allocate_shared_memory(dtype, [BM, BK], smem_layout([BM, BK], dtype),
                                    load_2d(a_ptr, BM, BK, num_warps))
    b_s = gl.allocate_shared_memory(dtype, [BK, N], smem_layout([BK, N], dtype),
                                    load_2d(b_ptr, BK, N, num_warps))
    occupy_smem(num_warps)  # one CTA per SM (allocated after A, B: it cannot alias them)
    fence_async_shared()  # generic-proxy stores -> visible to the tensor cores
    gl.thread_barrier()
    acc = gl.zeros([BM, N], gl.float32, acc_layout(N, num_warps))
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        for u in gl.static_range(UNROLL):
            acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
            acc = warpgroup_mma_wait(WAIT, deps=(acc,))
    acc = warpgroup_mma_wait(0, deps=(acc,))
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))
    if gl.program_id(0) == 0:
        lay: gl.constexpr = acc_layout(N, num_warps)
        r = gl.arange(0, BM, gl.SliceLayout(1, lay))
        c = gl.arange(0, N, gl.SliceLayout(0, lay))
        gl.store(out_ptr + gl.expand_dims(r, 1) * N + gl.expand_dims(c, 0), acc)


def config_name(dtype_name: str, N: int, wgs: int, wait: int) -> str:
    return f"wgmma m64n{N}k16 {dtype_name} {wgs}wg wait{wait}"


def compile_sm90(N: int = 128, wgs: int = 2, wait: int = 1, dtype: str = "fp16", unroll: int = 8):

    return common.compile_sm90(
        wgmma_rate_kernel,
        {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": "*fp32", "stats_ptr": "*i64",
         "iters": "i32"},
        {"N": N, "UNROLL": unroll, "WAIT": wait}, num_warps=4 * wgs)


def run(N: int, wgs: int, wait: int, torch_dtype, iters: int, gen, unroll: int = 8,
        grid: int | None = None) -> dict:
    """Check (a short run against float64), then one timed run of ``iters x unroll`` wgmmas
    per warpgroup on every SM. Returns one row."""
    import torch

    from .common import cta_stats, median

    BM = 64 * wgs
    grid = grid or common.sm_count()
    dev = common.DEVICE
    a = torch.randn(BM, K_STEP, device=dev, generator=gen).to(torch_dtype)
    b = torch.randn(K_STEP, N, device=dev, generator=gen).to(torch_dtype)
    out = torch.full((BM, N), float("nan"), device=dev)
    stats = common.stats_buffer(grid)
    kw = {"N": N, "UNROLL": unroll, "WAIT": wait, "num_warps": 4 * wgs}
    check_iters = 4
    wgmma_rate_kernel[(grid,)](a, b, out, stats, check_iters, **kw)
    common.sync()
    ref = (check_iters * unroll) * (a.double() @ b.double())
    err = float((out.double() - ref).norm() / ref.norm())
    err = float("inf") if math.isnan(err) else err
    dname = str(torch_dtype).removeprefix("torch.")
    row = {"bench": "wgmma", "dtype": dname, "N": N, "warpgroups": wgs, "wait": wait,
           "unroll": unroll, "iters": iters, "grid": grid, "rel_err": err, "ok": err < 1e-3}
    if not row["ok"]:
        return row
    wgmma_rate_kernel[(grid,)](a, b, out, stats, 2, **kw)  # warm-up (compiled already)
    stats = common.stats_buffer(grid)
    wgmma_rate_kernel[(grid,)](a, b, out, stats, iters, **kw)
    common.sync()
    s = cta_stats(stats)
    n_instr = iters * unroll  # per warpgroup
    cyc = median(s["cycles"])
    per_instr = cyc / (n_instr * wgs)
    row.update(cycles_median=cyc, cycles_min=float(s["cycles"].min()),
               cycles_max=float(s["cycles"].max()), one_cta_per_sm=s["one_cta_per_sm"],
               stats_written=s["written"],
               flop_per_clk_per_sm=n_instr * wgs * 2 * 64 * N * K_STEP / cyc,
               clk_per_instr=per_instr, overhead_beyond_half_n=per_instr - N / 2,
               clock_hz=float((s["cycles"] / s["ns"]).median()) * 1e9)
    row["ok"] = row["ok"] and s["written"] and s["one_cta_per_sm"]
    return row


def fit_overhead(rows: list[dict]) -> tuple[float, float]:
    """Least squares ``clk_per_instr = 2048·N / P + o`` over N: the tensor peak P (FLOP/clk/SM)
    and the per-instruction overhead o (clk). With one N only: P = 4096, o = its overhead."""
    pts = [(r["N"], r["clk_per_instr"]) for r in rows if r.get("ok") and "clk_per_instr" in r]
    if not pts:
        return float("nan"), float("nan")
    if len({n for n, _ in pts}) < 2:
        return 4096.0, sum(c - n / 2 for n, c in pts) / len(pts)
    mx = sum(n for n, _ in pts) / len(pts)
    my = sum(c for _, c in pts) / len(pts)
    slope = sum((n - mx) * (c - my) for n, c in pts) / sum((n - mx) ** 2 for n, _ in pts)
    return 2048.0 / slope if slope > 0 else float("nan"), my - slope * mx
