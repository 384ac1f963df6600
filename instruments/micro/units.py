"""SFU (MUFU) exp2 rate and FP32 FMA rate per SM.

Every thread runs ``VEC`` independent chains (``VEC`` registers) for ``ITERS x UNROLL`` steps;
one CTA of ``num_warps`` warps per SM. The instruction under test is written as inline PTX, so
the count is exact:

* exp2: ``x <- ex2.approx.ftz.f32(a - x)`` -- one MUFU.EX2 and one FADD per step (the FADD goes
  to the FMA pipe, which is 8x faster than the SFU: it does not limit the rate). It contracts
  (|d/dx| = ln2 · 2^(a-x) < 1 here), so errors do not grow; the fixed point depends on ``a``.
* FMA: ``x <- fma.rn.f32(x, a, b)`` -- one FFMA per step; closed form
  ``x_n = a^n x_0 + b (1 - a^n) / (1 - a)`` with 0.5 <= a <= 0.9.

Rate per SM = CTA's steps x VEC x threads / cycles (``%clock64``). Each result is checked
against a float64 reference of the same iteration.
"""
from __future__ import annotations

import math

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from . import common
from .common import clock64, globaltimer, occupy_smem, record, smid


@gluon.jit
def ex2(x):
    return gl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=gl.float32,
                                     is_pure=True, pack=1)


@gluon.jit
def ffma(x, a, b):
    return gl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, $3;", "=r,r,r,r", [x, a, b],
                                     dtype=gl.float32, is_pure=True, pack=1)


@gluon.jit
def exp2_rate_kernel(x_ptr, a_ptr, out_ptr, stats_ptr, iters, VEC: gl.constexpr,
                     UNROLL: gl.constexpr, num_warps: gl.constexpr):
    occupy_smem(num_warps)  # one CTA per SM
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [num_warps], [0])
    n: gl.constexpr = VEC * 32 * num_warps
    offs = gl.program_id(0) * n + gl.arange(0, n, layout)
    x = gl.load(x_ptr + offs)
    a = gl.load(a_ptr + offs)
    gl.thread_barrier()
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        for u in gl.static_range(UNROLL):
            x = ex2(a - x)
    gl.store(out_ptr + offs, x)
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))


@gluon.jit
def fma_rate_kernel(x_ptr, a_ptr, b_ptr, out_ptr, stats_ptr, iters, VEC: gl.constexpr,
                    UNROLL: gl.constexpr, num_warps: gl.constexpr):
    occupy_smem(num_warps)  # one CTA per SM
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [num_warps], [0])
    n: gl.constexpr = VEC * 32 * num_warps
    offs = gl.program_id(0) * n + gl.arange(0, n, layout)
    x = gl.load(x_ptr + offs)
    a = gl.load(a_ptr + offs)
    b = gl.load(b_ptr + offs)
    gl.thread_barrier()
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        for u in gl.static_range(UNROLL):
            x = ffma(x, a, b)
    gl.store(out_ptr + offs, x)
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))


def compile_sm90(which: str, vec: int = 8, num_warps: int = 8, unroll: int = 16):

    if which == "exp2":
        k, sig = exp2_rate_kernel, {"x_ptr": "*fp32", "a_ptr": "*fp32", "out_ptr": "*fp32",
                                    "stats_ptr": "*i64", "iters": "i32"}
    else:
        k, sig = fma_rate_kernel, {"x_ptr": "*fp32", "a_ptr": "*fp32", "b_ptr": "*fp32",
                                   "out_ptr": "*fp32", "stats_ptr": "*i64", "iters": "i32"}
    return common.compile_sm90(k, sig, {"VEC": vec, "UNROLL": unroll}, num_warps=num_warps)


def run(which: str, iters: int, gen, vec: int = 8, num_warps: int = 8, unroll: int = 16,
        grid: int | None = None) -> dict:
    """Check then time ``which`` ('exp2' or 'fma') on every SM; one row."""
    import torch

    from .common import cta_stats, median

    grid = grid or common.sm_count()
    n = grid * vec * 32 * num_warps
    dev = common.DEVICE
    x = torch.rand(n, device=dev, generator=gen, dtype=torch.float64)
    steps = lambda it: it * unroll
    kw = {"VEC": vec, "UNROLL": unroll, "num_warps": num_warps}
    if which == "exp2":
        a = torch.rand(n, device=dev, generator=gen, dtype=torch.float64) * 2 - 1   # [-1, 1)
        x = x * 2                                                                   # [0, 2)
        args = (x.float(), a.float())
        kern = exp2_rate_kernel

        def ref(it):
            r = x.clone()
            for _ in range(steps(it)):
                r = torch.exp2(a - r)
            return r
        tol = 1e-5
    else:
        a = 0.5 + 0.4 * torch.rand(n, device=dev, generator=gen, dtype=torch.float64)
        b = torch.rand(n, device=dev, generator=gen, dtype=torch.float64) - 0.5
        args = (x.float(), a.float(), b.float())
        kern = fma_rate_kernel

        def ref(it):
            af, bf, xf = (t.float().double() for t in (a, b, x))  # the fp32 inputs, exactly
            an = af ** steps(it)
            return an * xf + bf * (1 - an) / (1 - af)
        tol = 1e-5
    out = torch.full((n,), float("nan"), device=dev)
    stats = common.stats_buffer(grid)
    check_iters = 3
    kern[(grid,)](*args, out, stats, check_iters, **kw)
    common.sync()
    r = ref(check_iters)
    err = float((out.double() - r).norm() / r.norm())
    err = float("inf") if math.isnan(err) else err
    row = {"bench": which, "vec": vec, "num_warps": num_warps, "unroll": unroll, "iters": iters,
           "grid": grid, "rel_err": err, "ok": err < tol}
    if not row["ok"]:
        return row
    stats = common.stats_buffer(grid)
    kern[(grid,)](*args, out, stats, iters, **kw)
    common.sync()
    s = cta_stats(stats)
    cyc = median(s["cycles"])
    ops = iters * unroll * vec * 32 * num_warps  # per CTA
    row.update(cycles_median=cyc, cycles_min=float(s["cycles"].min()),
               cycles_max=float(s["cycles"].max()), one_cta_per_sm=s["one_cta_per_sm"],
               stats_written=s["written"], per_clk_per_sm=ops / cyc,
               finite=bool(torch.isfinite(out).all()),
               clock_hz=float((s["cycles"] / s["ns"]).median()) * 1e9)
    row["ok"] = row["ok"] and s["written"] and s["one_cta_per_sm"] and row["finite"]
    return row
