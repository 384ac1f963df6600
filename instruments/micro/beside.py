"""A softmax beside its own warpgroup's wgmma: does an RS wgmma (A = P from the same warps'
registers, as in fa3's P·V) slow the softmax that runs under it more than an SS one does?

One warpgroup, one CTA per SM. Each of ``iters`` rounds issues (MODE 1: RS, MODE 2: SS; MODE 0:
nothing) ``K / 16`` async m64n128k16 into its own accumulator, runs an online-softmax step on a
64 × 128 fp32 tile in registers (row max, exp2, row sum — the kernels' softmax shape), then
waits for the wgmmas. Cycles per round (the median CTA). If the two units only overlapped,
MODE 1 and 2 would cost max(softmax, issue + wgmma); the RS excess over SS is what reading A from
registers costs the softmax beside it.

Check: the accumulator is ``iters · A @ B`` and the softmax's row sums match float64.
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
from .wgmma import acc_layout, load_2d, smem_layout

MODES = {0: "softmax alone", 1: "softmax beside RS wgmma", 2: "softmax beside SS wgmma"}


@gluon.jit
def beside_kernel(a_ptr, b_ptr, s_ptr, out_ptr, l_ptr, stats_ptr, iters, K: gl.constexpr,
                  MODE: gl.constexpr, num_warps: gl.constexpr):
    gl.static_assert(num_warps == 4, "one warpgroup")
    dtype: gl.constexpr = a_ptr.dtype.element_ty
    acc_l: gl.constexpr = acc_layout(128, 4)
    a_s = gl.allocate_shared_memory(dtype, [64, K], smem_layout([64, K], dtype),
                                    load_2d(a_ptr, 64, K, 4))
    b_s = gl.allocate_shared_memory(dtype, [K, 128], smem_layout([K, 128], dtype),
                                    load_2d(b_ptr, K, 128, 4))
    occupy_smem(4)
    fence_async_shared()
    gl.thread_barrier()
    a_r = a_s.load(gl.DotOperandLayout(operand_index=0, parent=acc_l, k_width=2))
    r = gl.arange(0, 64, gl.SliceLayout(1, acc_l))
    c = gl.arange(0, 128, gl.SliceLayout(0, acc_l))
    offs = gl.expand_dims(r, 1) * 128 + gl.expand_dims(c, 0)
    s = gl.load(s_ptr + offs)
    m_i = gl.full([64], -float("inf"), gl.float32, gl.SliceLayout(1, acc_l))
    l_i = gl.zeros([64], gl.float32, gl.SliceLayout(1, acc_l))
    acc = gl.zeros([64, 128], gl.float32, acc_l)
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        if MODE == 1:
            acc = warpgroup_mma(a_r, b_s, acc, is_async=True)
        elif MODE == 2:
            acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
        x = s + i.to(gl.float32)                   # a new tile each round: nothing to hoist
        m_new = gl.maximum(m_i, gl.max(x, axis=1))
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(x - gl.expand_dims(m_new, 1))
        l_i = l_i * alpha + gl.sum(p, axis=1)
        m_i = m_new
        if MODE != 0:
            acc = warpgroup_mma_wait(0, deps=(acc,))
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))
    if gl.program_id(0) == 0:
        gl.store(out_ptr + offs, acc)
        gl.store(l_ptr + r, l_i)


def compile_sm90(K: int = 128, mode: int = 1, dtype: str = "fp16"):
    return common.compile_sm90(
        beside_kernel,
        {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "s_ptr": "*fp32", "out_ptr": "*fp32",
         "l_ptr": "*fp32", "stats_ptr": "*i64", "iters": "i32"}, {"K": K, "MODE": mode})


def reference(a, b, s, iters: int, mode: int):
    """float64: the accumulator and the softmax's row sums after ``iters`` rounds."""
    import torch

    acc = iters * (a.double() @ b.double()) if mode else torch.zeros(64, 128, dtype=torch.float64)
    s = s.double()
    m = torch.full((64,), -math.inf, dtype=torch.float64)
    l_i = torch.zeros(64, dtype=torch.float64)
    for i in range(iters):
        x = s + i
        m_new = torch.maximum(m, x.max(dim=1).values)
        l_i = l_i * torch.exp2(m - m_new) + torch.exp2(x - m_new[:, None]).sum(dim=1)
        m = m_new
    return acc, l_i


def run(K: int, mode: int, iters: int, gen, grid: int | None = None) -> dict:
    """Check a short run against float64, then time ``iters`` rounds on every SM."""
    import torch

    from .common import cta_stats, median

    dev, grid = common.DEVICE, grid or common.sm_count()
    a = torch.randn(64, K, device=dev, generator=gen).half()
    b = (torch.randn(K, 128, device=dev, generator=gen) / 8).half()
    s = torch.randn(64, 128, device=dev, generator=gen) * 4
    out = torch.full((64, 128), float("nan"), device=dev)
    l_out = torch.full((64,), float("nan"), device=dev)
    kw = {"K": K, "MODE": mode, "num_warps": 4}
    check = 8
    beside_kernel[(grid,)](a, b, s, out, l_out, common.stats_buffer(grid), check, **kw)
    common.sync()
    acc_ref, l_ref = reference(a.cpu(), b.cpu(), s.cpu(), check, mode)
    err_acc = 0.0
    if mode:
        err_acc = float((out.double().cpu() - acc_ref).norm() / acc_ref.norm())
    err_l = float(((l_out.double().cpu() - l_ref).abs() / l_ref).max())
    stats = common.stats_buffer(grid)
    beside_kernel[(grid,)](a, b, s, out, l_out, stats, iters, **kw)
    common.sync()
    st = cta_stats(stats)
    clk = median(st["cycles"]) / iters
    errs = [e for e in (err_acc, err_l) if not math.isnan(e)]
    ok = len(errs) == 2 and max(errs) < 1e-3 and st["written"] and st["one_cta_per_sm"]
    return {"bench": "softmax_beside_wgmma", "name": MODES[mode], "mode": mode, "K": K,
            "wgmma_instr": K // 16 if mode else 0, "iters": iters, "grid": grid,
            "rel_err_acc": err_acc, "rel_err_rowsum": err_l, "ok": bool(ok), "clk_per_round": clk}


def _rows(gen) -> list[dict]:
    return [run(K, mode, 2000, gen) for K in (64, 128) for mode in (0, 1, 2)]


def _line(r: dict) -> str:
    return (f"{r['name']:26s} K {r['K']:3d} ({r['wgmma_instr']} wgmma) ok={r['ok']} "
            f"{r['clk_per_round']:7.1f} clk/round  "
            f"err {r['rel_err_acc']:.1e} {r['rel_err_rowsum']:.1e}")


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "beside.json", 7, _rows, _line))
