"""wgmma issue: when does the issuing warpgroup get its next instruction back?

``wgmma.mma_async`` returns at once only while the tensor pipe can take more. This benchmark
reads ``%clock64`` in every thread right after each issue, so it shows both what one issue costs
the warpgroup when the pipe is idle and how many instructions can be queued before an issue
waits for the pipe (the queue's depth). Attention's overlap loop issues Q·K_jᵀ (16 rows of each
warp × block_n, A and B from shared memory: SS) and P_{j-1}·V_{j-1} (A = P from registers: RS)
back to back and then waits for the scores alone; when the second group cannot be queued, the
softmax starts only once the pipe has taken it.

One CTA per SM, 1 or 2 warpgroups (``num_warps`` 4 or 8, one partition: both issue in step, as
the in-line kernels do). ``G`` groups, each one ``warpgroup_mma`` of ``KG / 16`` m64nNk16
instructions, all chained into one accumulator, no wait between them; then ``wait_group 0``.
``MODE``: 0 all SS, 1 all RS, 2 SS and RS alternating (Q·Kᵀ then P·V, as in the overlap loop).
Row t of ``times`` (int64, ``G + 2`` rows × threads) holds each thread's clock: row 0 before the
first issue, row g + 1 after issuing group g, row G + 1 after ``wait_group 0``.

Check: the accumulator is ``G · A @ B`` (fp32) against float64.
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
from .common import clock64, occupy_smem
from .wgmma import acc_layout, load_2d, smem_layout

MODES = {0: "SS", 1: "RS", 2: "SS+RS"}


@gluon.jit
def wgmma_issue_kernel(a_ptr, b_ptr, out_ptr, times_ptr, N: gl.constexpr, KG: gl.constexpr,
                       G: gl.constexpr, MODE: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = 16 * num_warps  # 64 rows per warpgroup
    T: gl.constexpr = 32 * num_warps
    dtype: gl.constexpr = a_ptr.dtype.element_ty
    acc_l: gl.constexpr = acc_layout(N, num_warps)
    a_s = gl.allocate_shared_memory(dtype, [BM, KG], smem_layout([BM, KG], dtype),
                                    load_2d(a_ptr, BM, KG, num_warps))
    b_s = gl.allocate_shared_memory(dtype, [KG, N], smem_layout([KG, N], dtype),
                                    load_2d(b_ptr, KG, N, num_warps))
    occupy_smem(num_warps)  # one CTA per SM
    fence_async_shared()
    gl.thread_barrier()
    a_r = a_s.load(gl.DotOperandLayout(operand_index=0, parent=acc_l, k_width=2))
    ids = gl.arange(0, T, gl.BlockedLayout([1], [32], [num_warps], [0]))
    row = times_ptr + gl.program_id(0) * (G + 2) * T + ids
    acc = gl.zeros([BM, N], gl.float32, acc_l)
    gl.thread_barrier()
    gl.store(row, clock64(ids))
    for g in gl.static_range(G):
        if MODE == 0 or (MODE == 2 and g % 2 == 0):
            acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
        else:
            acc = warpgroup_mma(a_r, b_s, acc, is_async=True)
        gl.store(row + (g + 1) * T, clock64(ids))
    acc = warpgroup_mma_wait(0, deps=(acc,))
    gl.store(row + (G + 1) * T, clock64(ids))
    if gl.program_id(0) == 0:
        r = gl.arange(0, BM, gl.SliceLayout(1, acc_l))
        c = gl.arange(0, N, gl.SliceLayout(0, acc_l))
        gl.store(out_ptr + gl.expand_dims(r, 1) * N + gl.expand_dims(c, 0), acc)


def config_name(N: int, KG: int, G: int, mode: int, wgs: int) -> str:
    return f"issue {MODES[mode]} m64n{N}k16 ×{KG // 16} ×{G} {wgs}wg"


def compile_sm90(N: int = 128, KG: int = 16, G: int = 24, mode: int = 0, wgs: int = 1,
                 dtype: str = "fp16"):
    return common.compile_sm90(
        wgmma_issue_kernel,
        {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": "*fp32", "times_ptr": "*i64"},
        {"N": N, "KG": KG, "G": G, "MODE": mode}, num_warps=4 * wgs)


def run(N: int, KG: int, G: int, mode: int, wgs: int, torch_dtype, gen,
        grid: int | None = None) -> dict:
    """Check and time one configuration on every SM (one CTA each); returns one row."""
    import torch

    BM = 64 * wgs
    grid = grid or common.sm_count()
    dev = common.DEVICE
    a = torch.randn(BM, KG, device=dev, generator=gen).to(torch_dtype)
    b = torch.randn(KG, N, device=dev, generator=gen).to(torch_dtype)
    out = torch.full((BM, N), float("nan"), device=dev)
    kw = {"N": N, "KG": KG, "G": G, "MODE": mode, "num_warps": 4 * wgs}
    times = torch.full((grid, G + 2, 128 * wgs), -1, dtype=torch.int64, device=dev)
    for _ in range(2):  # compile + warm-up, then the measured launch
        wgmma_issue_kernel[(grid,)](a, b, out, times, **kw)
    common.sync()
    ref = G * (a.double() @ b.double())
    err = float((out.double() - ref).norm() / ref.norm())
    err = float("inf") if math.isnan(err) else err
    per_wg = []
    for w in range(wgs):
        rel = (times[:, 1:, 128 * w] - times[:, :1, 128 * w]).double()
        per_wg.append(rel.median(dim=0).values.tolist())
    instr = KG // 16
    row = {"bench": "wgmma_issue", "name": config_name(N, KG, G, mode, wgs),
           "dtype": str(torch_dtype).removeprefix("torch."), "N": N, "instr_per_group": instr,
           "groups": G, "mode": MODES[mode], "warpgroups": wgs, "grid": grid, "rel_err": err,
           "ok": err < 1e-3 and bool((times >= 0).all()),
           "clk_after_issue": [c[:-1] for c in per_wg], "clk_after_wait": [c[-1] for c in per_wg],
           "math_clk_per_instr": N / 2}
    return row


def queue_summary(row: dict) -> dict:
    """For the printed line, from one row's issue curve: the cost of one issue while the pipe
    takes it at once (the median step over the first three groups, per instruction), the first
    group that fell behind the pipe's rate, and a rough count of what was in flight then (the
    depth the model takes is fitted to the whole curves: tests/model/test_wgmma_issue.py)."""
    curve = row["clk_after_issue"][0]
    per = row["instr_per_group"]
    steps = [b - a for a, b in zip([0.0] + curve[:-1], curve)]
    early = sorted(steps[:3])[1] / per
    math_clk = row["math_clk_per_instr"] * row["warpgroups"]
    blocked = next((g for g, s in enumerate(steps) if s > 0.8 * math_clk * per), None)
    depth = None
    if blocked is not None:
        t = curve[blocked - 1] if blocked else 0.0
        depth = (blocked * per) - t / math_clk
    return {"issue_clk": early, "first_blocked_group": blocked, "in_flight_when_blocked": depth}


def constants(rows: list[dict]) -> dict:
    """The model's issue cost from the ok rows: per SS instruction ``a + b·N``, ``rs`` more with
    A from registers — a least-squares fit to one warpgroup's first group of 4 or more
    instructions, which returns before the queue is full. (The queue's depth is the model's to
    fit: tests/model/test_wgmma_issue.py runs this benchmark in the model.)"""
    import numpy as np

    fit = [r for r in rows if r["ok"] and r["warpgroups"] == 1 and r["instr_per_group"] >= 4
           and r["mode"] in ("SS", "RS")]
    a = np.array([[r["instr_per_group"], r["instr_per_group"] * r["N"],
                   r["instr_per_group"] * (r["mode"] == "RS")] for r in fit], float)
    t = np.array([r["clk_after_issue"][0][0] for r in fit], float)
    (base, per_n, rs), *_ = np.linalg.lstsq(a, t, rcond=None)
    return {"wgmma_issue_clk": float(base), "wgmma_issue_clk_per_n": float(per_n),
            "wgmma_issue_rs_clk": float(rs), "rows": len(fit),
            "worst_fit_clk": float(np.abs(a @ [base, per_n, rs] - t).max())}


# (N, KG, G, mode, warpgroups): the queue with single instructions (KG 16), then groups shaped
# like attention's (8 instructions: Q·Kᵀ over a 128-wide head, P·V over a 128-row block).
CONFIGS = [(128, 16, 24, m, w) for w in (1, 2) for m in (0, 1, 2)] + \
          [(64, 16, 32, 0, 1), (256, 16, 16, 0, 1), (256, 16, 16, 1, 1)] + \
          [(128, 128, 6, m, w) for w in (1, 2) for m in (0, 1, 2)] + \
          [(n, kg, 6, m, w) for n, kg in ((256, 64), (128, 64), (64, 128)) for m in (0, 1)
           for w in (1, 2)]


def _rows(gen) -> list[dict]:
    import torch

    return [{**(row := run(*cfg, torch.float16, gen)), **queue_summary(row)} for cfg in CONFIGS]


def _line(row: dict) -> str:
    return (f"{row['name']:34s} ok={row['ok']} issue={row['issue_clk']:.1f} clk/instr "
            f"blocked@{row['first_blocked_group']} in flight~{row['in_flight_when_blocked']} "
            f"wait={row['clk_after_wait'][0]:.0f} "
            f"curve={[round(x) for x in row['clk_after_issue'][0]]}")


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "issue.json", 5, _rows, _line))
