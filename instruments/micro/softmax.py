"""The attention kernels' own softmax, timed: one warpgroup alone, two side by side in one
8-warp partition (the in-line kernels' two 64-row halves), one beside a second partition's
softmax or wgmma groups (``BESIDE``), and with a consumer's three arrives a round
(``RELEASES``). The other side too: a warpgroup's wgmma groups — Q·Kᵀ alone, or Q·Kᵀ and P·V
back to back as a fa3 consumer issues them on its turn (``TURN``) — timed alone and beside a
softmax, issue and round.

Each round runs what a consumer does to a 128-column block of scores between its two GEMMs —
``kernels/attention/steps.py``'s ``softmax`` (row max, P = exp2(S·scale − m), the rescale
factor, the row sum), ``rescale`` (O *= alpha) and ``to_operand`` (P to fp16 in P·V's register
layout) — on tiles held in registers. The next round's scores are this round's P, so nothing
can be hoisted out of the loop and no instruction is added. Cycles per round, the median CTA,
one CTA per SM.

Check: after a few rounds the row sums, O and P match float64; the wgmma groups' accumulator
is their number times A·B (and A·B again for each P·V-like group) in float64.
"""
from __future__ import annotations

import math

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from kernels.attention.steps import mma_layout, pack as to_operand, rescale, softmax
from . import common
from .common import clock64, globaltimer, occupy_smem, record, smid
from .wgmma import load_2d, smem_layout

COLS = 128                                            # block_n = head dim = 128
BN = gl.constexpr(COLS)
D = gl.constexpr(COLS)


@gluon.jit
def softmax_rounds(s_ptr, m_ptr, o_ptr, p_ptr, l_ptr, stats_ptr, iters, qk_scale,
                   WRITE: gl.constexpr, num_warps: gl.constexpr, bars=None,
                   RELEASES: gl.constexpr = 0):
    """``iters`` rounds on this partition's tile; with ``WRITE`` (the timed partition) its clocks
    to ``stats`` and, in CTA 0, its results."""
    M: gl.constexpr = 16 * num_warps                  # 64 rows per warpgroup
    s_l: gl.constexpr = mma_layout(BN, num_warps)
    o_l: gl.constexpr = mma_layout(D, num_warps)
    r = gl.arange(0, M, gl.SliceLayout(1, s_l))
    c = gl.arange(0, BN, gl.SliceLayout(0, s_l))
    s = gl.load(s_ptr + gl.expand_dims(r, 1) * BN + gl.expand_dims(c, 0))
    ro = gl.arange(0, M, gl.SliceLayout(1, o_l))
    co = gl.arange(0, D, gl.SliceLayout(0, o_l))
    acc = gl.load(o_ptr + gl.expand_dims(ro, 1) * D + gl.expand_dims(co, 0))
    m_i = gl.load(m_ptr + r)                          # a running max from earlier blocks
    l_i = gl.full([M], 0.0, gl.float32, gl.SliceLayout(1, s_l))
    p16 = to_operand(s, gl.float16, D, num_warps)
    seqlen = 1 << 30                                  # no block reaches past the end: no mask
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        p, alpha, m_i, l_i = softmax(s, m_i, l_i, 0, 0, r, seqlen, qk_scale, BN, False)
        acc = rescale(acc, alpha)
        p16 = to_operand(p, gl.float16, D, num_warps)
        s = p
        for k in gl.static_range(RELEASES):  # a consumer's arrives: turn, K_j, V_{j-1}
            mbarrier.arrive(bars.index(k))
    t1 = clock64(0)
    g1 = globaltimer(0)
    if WRITE:
        record(stats_ptr, t0, t1, g0, g1, smid(0))
        if gl.program_id(0) == 0:
            gl.store(o_ptr + gl.expand_dims(ro, 1) * D + gl.expand_dims(co, 0), acc)
            pl: gl.constexpr = p16.type.layout
            rp = gl.arange(0, M, gl.SliceLayout(1, pl))
            cp = gl.arange(0, BN, gl.SliceLayout(0, pl))
            gl.store(p_ptr + gl.expand_dims(rp, 1) * BN + gl.expand_dims(cp, 0), p16)
            gl.store(l_ptr + r, l_i)
    else:  # keep the other partition's work live
        gl.store(l_ptr + M + r, l_i, mask=l_i != l_i)


@gluon.jit
def wgmma_rounds(a_s, b_s, g_ptr, gstats_ptr, iters, TURN: gl.constexpr):
    """The other warpgroup's GEMMs, each round waited for: a group of 8 SS m64n128k16 (a
    Q·Kᵀ), and with ``TURN`` a group of 8 RS ones right after it (a P·V: A from registers), as a
    fa3 consumer issues both on its turn. Its clocks go to ``gstats``: [start, end, cycles spent
    issuing (from before the first wgmma of a round to after its last), 0, smid]."""
    acc_l: gl.constexpr = mma_layout(128, 4)
    acc = gl.zeros([64, 128], gl.float32, acc_l)
    a_r = a_s.load(gl.DotOperandLayout(operand_index=0, parent=acc_l, k_width=2))
    issuing = gl.to_tensor(0).to(gl.int64)
    t0 = clock64(0)
    for i in range(iters):
        c0 = clock64(0)
        acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
        if TURN:
            acc = warpgroup_mma(a_r, b_s, acc, is_async=True)
        issuing += clock64(0) - c0
        acc = warpgroup_mma_wait(0, deps=(acc,))
    t1 = clock64(0)
    base = gstats_ptr + gl.program_id(0) * 5
    gl.store(base + 0, t0)
    gl.store(base + 1, t1)
    gl.store(base + 2, issuing)
    gl.store(base + 3, t1 - t1)
    gl.store(base + 4, smid(0).to(gl.int64))
    if gl.program_id(0) == 0:
        r = gl.arange(0, 64, gl.SliceLayout(1, acc_l))
        c = gl.arange(0, 128, gl.SliceLayout(0, acc_l))
        gl.store(g_ptr + gl.expand_dims(r, 1) * 128 + gl.expand_dims(c, 0), acc)


@gluon.jit
def softmax_kernel(s_ptr, m_ptr, o_ptr, p_ptr, l_ptr, a_ptr, b_ptr, stats_ptr, iters, qk_scale,
                   g_ptr, gstats_ptr, gemm_iters, BESIDE: gl.constexpr, num_warps: gl.constexpr,
                   RELEASES: gl.constexpr = 0, TURN: gl.constexpr = False):
    """BESIDE 0: the kernel's warps are one partition (4: one warpgroup alone; 8: two in step).
    1: a second warpgroup, its own partition, runs the same rounds on rows 64..127 (ws-like).
    2: a second warpgroup issues ``gemm_iters`` wgmma groups (``wgmma_rounds``) beside the
    softmax's ``iters`` rounds (as a turn-mate does); with ``iters`` 0 the groups run alone."""
    a_s = gl.allocate_shared_memory(gl.float16, [64, 128], smem_layout([64, 128], gl.float16),
                                    load_2d(a_ptr, 64, 128, num_warps))
    b_s = gl.allocate_shared_memory(gl.float16, [128, 128], smem_layout([128, 128], gl.float16),
                                    load_2d(b_ptr, 128, 128, num_warps))
    occupy_smem(num_warps)
    fence_async_shared()
    gl.thread_barrier()
    bars = gl.allocate_shared_memory(gl.int64, [3, 1], mbarrier.MBarrierLayout())
    for k in gl.static_range(3):
        mbarrier.init(bars.index(k), count=1)       # nobody waits: each arrive ends a phase
    fence_async_shared()
    if BESIDE == 0:
        softmax_rounds(s_ptr, m_ptr, o_ptr, p_ptr, l_ptr, stats_ptr, iters, qk_scale, True,
                       num_warps, bars, RELEASES)
    elif BESIDE == 1:
        gl.warp_specialize([
            (softmax_rounds, (s_ptr, m_ptr, o_ptr, p_ptr, l_ptr, stats_ptr, iters, qk_scale,
                              True, num_warps)),
            (softmax_rounds, (s_ptr, m_ptr, o_ptr, p_ptr, l_ptr, stats_ptr, iters, qk_scale,
                              False, 4)),
        ], [4], [232])
    else:
        gl.warp_specialize([
            (softmax_rounds, (s_ptr, m_ptr, o_ptr, p_ptr, l_ptr, stats_ptr, iters, qk_scale,
                              True, num_warps)),
            (wgmma_rounds, (a_s, b_s, g_ptr, gstats_ptr, gemm_iters, TURN)),
        ], [4], [232])


MAXNREG = 232  # register cap at entry for the two-partition modes (setmaxnreg needs one)
BESIDE = {0: "alone", 1: "beside a second softmax warpgroup", 2: "beside a warpgroup's wgmmas"}


def _options(warpgroups: int, beside: int, releases: int, turn: bool = False) -> dict:
    """Launch options (warps, the register cap) of one mode; a mode that does not exist is an
    error."""
    if beside and warpgroups != 1:
        raise ValueError("a second warpgroup in its own partition: the timed one is 4 warps")
    if releases and beside:
        raise ValueError("releases are timed on a partition of its own (beside 0)")
    if turn and beside != 2:
        raise ValueError("TURN shapes the wgmma groups of beside 2; there are none otherwise")
    return {"num_warps": 4 * warpgroups, **({"maxnreg": MAXNREG} if beside else {})}


def compile_sm90(warpgroups: int = 1, beside: int = 0, releases: int = 0, turn: bool = False):
    return common.compile_sm90(
        softmax_kernel,
        {"s_ptr": "*fp32", "m_ptr": "*fp32", "o_ptr": "*fp32", "p_ptr": "*fp16", "l_ptr": "*fp32",
         "a_ptr": "*fp16", "b_ptr": "*fp16", "stats_ptr": "*i64", "iters": "i32",
         "qk_scale": "fp32", "g_ptr": "*fp32", "gstats_ptr": "*i64", "gemm_iters": "i32"},
        {"BESIDE": beside, "RELEASES": releases, "TURN": turn},
        **_options(warpgroups, beside, releases, turn))


def reference(s, m, o, iters: int, qk_scale: float):
    """float64: (O, P, l) after ``iters`` rounds."""
    import torch

    s, m, o = s.double(), m.double(), o.double()
    l_i = torch.zeros(s.shape[0], dtype=torch.float64)
    for _ in range(iters):
        m_new = torch.maximum(m, s.max(dim=1).values * qk_scale)
        p = torch.exp2(s * qk_scale - m_new[:, None])
        alpha = torch.exp2(m - m_new)
        l_i = l_i * alpha + p.sum(dim=1)
        o = o * alpha[:, None]
        m, s = m_new, p
    return o, s, l_i


def run(warpgroups: int, iters: int, gen, beside: int = 0, releases: int = 0,
        grid: int | None = None, gemm_iters: int | None = None, turn: bool = False) -> dict:
    """One mode, checked and timed. ``iters`` softmax rounds (0: the wgmma groups of beside 2
    alone) and, with beside 2, ``gemm_iters`` wgmma groups (default 2·iters, enough to outlast
    the softmax)."""
    import torch

    from .common import cta_stats, median

    dev, grid = common.DEVICE, grid or common.sm_count()
    M = 64 * warpgroups
    qk_scale = 1.4426950408889634 / math.sqrt(COLS)      # log2(e)/sqrt(d), as the kernels use
    s = torch.randn(M, COLS, device=dev, generator=gen) * 8
    o0 = torch.randn(M, COLS, device=dev, generator=gen)
    m0 = s.max(dim=1).values * qk_scale - 1.0         # so that O is rescaled by 1/2, not 0
    a = torch.randn(64, COLS, device=dev, generator=gen).half()
    b = (torch.randn(COLS, COLS, device=dev, generator=gen) / 8).half()
    kw = {"BESIDE": beside, "RELEASES": releases, "TURN": turn,
          **_options(warpgroups, beside, releases, turn)}
    gemm_iters = (2 * iters if gemm_iters is None else gemm_iters) if beside == 2 else 0
    check = 6
    o, p = o0.clone(), torch.empty(M, COLS, device=dev, dtype=torch.float16)
    l_out = torch.empty(M + 64, device=dev)
    g = torch.full((64, COLS), float("nan"), device=dev)
    softmax_kernel[(grid,)](s, m0, o, p, l_out, a, b, common.stats_buffer(grid), check, qk_scale,
                            g, common.stats_buffer(grid), check if beside == 2 else 0, **kw)
    common.sync()
    o_ref, p_ref, l_ref = reference(s.cpu(), m0.cpu(), o0.cpu(), check, qk_scale)
    errs = [float((o.double().cpu() - o_ref).norm() / o_ref.norm()),
            float((p.double().cpu() - p_ref).norm() / p_ref.norm()),
            float(((l_out[:M].double().cpu() - l_ref).abs() / l_ref).max())]
    if beside == 2:
        g_ref = check * (2 if turn else 1) * (a.double() @ b.double()).cpu()
        errs.append(float((g.double().cpu() - g_ref).norm() / g_ref.norm()))
    stats, gstats = common.stats_buffer(grid), common.stats_buffer(grid)
    softmax_kernel[(grid,)](s, m0, o0.clone(), p, l_out, a, b, stats, iters, qk_scale,
                            g, gstats, gemm_iters, **kw)
    common.sync()
    st = cta_stats(stats)
    ok = all(e < 2e-3 for e in errs) and st["written"] and st["one_cta_per_sm"]
    row = {"bench": "attention_softmax", "warpgroups": warpgroups, "beside": BESIDE[beside],
           "releases": releases, "rows": M, "block_n": COLS, "iters": iters, "grid": grid,
           "rel_err_o_p_l": errs, "ok": bool(ok),
           "clk_per_round": median(st["cycles"]) / iters if iters else None}
    if beside == 2:
        gs = gstats.cpu()
        ok_g = bool((gs >= 0).all()) and gemm_iters > 0
        row.update(ok=row["ok"] and ok_g, turn=turn, gemm_iters=gemm_iters,
                   gemm_groups=["QK SS x8", "PV RS x8"] if turn else ["QK SS x8"],
                   gemm_clk_per_round=median((gs[:, 1] - gs[:, 0]).double()) / gemm_iters,
                   gemm_issue_clk_per_round=median(gs[:, 2].double()) / gemm_iters)
    return row


def _rows(gen) -> list[dict]:
    """The softmax rows (alone, side by side, beside, with releases), then the wgmma groups alone and beside a softmax (the softmax
    outlasts them: 2000 rounds against 1000 groups)."""
    rows = [run(1, 2000, gen), run(2, 2000, gen), run(1, 2000, gen, beside=1),
            run(1, 2000, gen, beside=2), run(1, 2000, gen, releases=3),
            run(2, 2000, gen, releases=3)]
    for turn in (False, True):
        rows += [run(1, 0, gen, beside=2, gemm_iters=1000, turn=turn),
                 run(1, 2000, gen, beside=2, gemm_iters=1000, turn=turn)]
    return rows


def _line(r: dict) -> str:
    soft = "—" if r["clk_per_round"] is None else f"{r['clk_per_round']:.1f}"
    line = (f"softmax + rescale + pack, {r['warpgroups']} warpgroup(s) {r['beside']}, "
            f"{r['releases']} arrives, {r['rows']}×{COLS} x{r['iters']}: ok={r['ok']} "
            f"{soft} clk/round")
    if "gemm_clk_per_round" in r:
        line += (f"; wgmma {'+'.join(r['gemm_groups'])} x{r['gemm_iters']}: "
                 f"{r['gemm_clk_per_round']:.1f} clk/round, issue {r['gemm_issue_clk_per_round']:.1f}")
    return line + f"  errors {r['rel_err_o_p_l']}"


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "softmax.json", 11, _rows, _line))
