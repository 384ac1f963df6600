"""fa3's K/V block step by step: where a consumer warp's clocks go on the H200 (Nsight Compute's
PC samples, no Proton scopes) beside the model's consumer at the same configuration.

The measured side reads the committed source pages of the plain fa3 launches
(`records.sass`: d 64 and d 256 in one run, d 128 in another) and cuts each consumer
partition's loop at its landmarks, in the kernel's order (`kernels/attention/overlap.py`)::

    wait K, V, turn   the loop's first bar.sync, the three mbarrier waits, address work
    issue QK          WARPGROUP.ARRIVE .. the 16 (d 256) SS HGMMAs, up to the one that ends the group
    issue PV          the RS HGMMAs of P·V up to theirs (a full wgmma queue stalls here)
    pass turn         bar.sync + the turn's mbarrier arrive
    wait scores       WARPGROUP.DEPBAR.LE gsb0, 1
    release K         bar.sync + K's empty arrive
    softmax           row max, exps, scale and row sum
    wait PV           WARPGROUP.DEPBAR.LE gsb0, 0
    rescale O         O's FMULs (with V's release and the fence's store among them)
    pack P            the F2FPs

The model's side is the same steps read off its trace (`model_steps`): its waits, its two
issue spans, its softmax, rescale and pack, and the time between them — a warpgroup blocked
on its scores or on P·V. Both in clocks per K/V block of one warp (one warpgroup).

    python -m fidelity.ledger [--dim 256]
"""
from __future__ import annotations

import argparse
import json
import math

from records import RESULTS, sass
from sim import attention, hardware
from sim.config import AttentionConfig
from sim.predict import clocked

STEPS = ("wait K, V, turn", "issue QK", "issue PV", "pass turn", "wait scores", "release K",
         "softmax", "wait PV", "rescale O", "pack P")
# The plain fa3 launches Nsight Compute sampled: (source page, launch index, the row of the
# JSON that holds its cycles per block, that row's selector, the launch's shape).
RUNS = {
    64: ("h200-2026-12-04-G5-dims_source.log.gz", 0, "h200-stall-dims.json", {"d": 64}),
    128: ("h200-2026-12-03-S1-stall_source.log.gz", 5, "h200-stall.json", {"variant": "fa3"}),
    256: ("h200-2026-12-04-G5-dims_source.log.gz", 1, "h200-stall-dims.json", {"d": 256}),
}
# fa3's tile at each head dim (kernels/attention's configs; the ncu rows carry BM, BN at 64
# and 256) and the launch's shape (instruments/tools/stall_probe.py: DIMS, l2_probe.ATTN_SHAPE)
TILE = {64: (192, 128, 3), 128: (128, 128, 2), 256: (128, 64, 2)}
SHAPE = {64: (4, 32, 8448), 128: (4, 16, 8448), 256: (4, 8, 8448)}


def _is(line: sass.Line, *prefixes: str) -> bool:
    return line.opcode.startswith(prefixes)


def measured_steps(loop: list[sass.Line]) -> dict[str, float]:
    """One partition's loop cut at its landmarks -> PC samples per step (`STEPS`)."""
    def find(start, pred, what):
        for i in range(start, len(loop)):
            if pred(loop[i]):
                return i
        raise ValueError(f"fa3's consumer loop: no {what} after instruction {start} "
                         f"(expected the order of {', '.join(STEPS)})")
    qk = find(0, lambda ln: _is(ln, "WARPGROUP.ARRIVE"), "WARPGROUP.ARRIVE")
    qk_end = find(qk, lambda ln: _is(ln, "HGMMA") and "gsb0" in ln.source, "Q·Kᵀ's last HGMMA")
    pv_end = find(qk_end + 1, lambda ln: _is(ln, "HGMMA") and "gsb0" in ln.source,
                  "P·V's last HGMMA")
    scores = find(pv_end, lambda ln: _is(ln, "WARPGROUP.DEPBAR") and "0x1" in ln.source,
                  "the scores' WARPGROUP.DEPBAR")
    release_k = find(scores, lambda ln: _is(ln, "SYNCS.ARRIVE"), "K's release (SYNCS.ARRIVE)")
    pv_wait = find(release_k, lambda ln: _is(ln, "WARPGROUP.DEPBAR") and "0x0" in ln.source,
                   "P·V's WARPGROUP.DEPBAR")
    pack = find(pv_wait, lambda ln: _is(ln, "F2FP"), "the pack (F2FP)")
    cuts = [0, qk, qk_end + 1, pv_end + 1, scores, scores + 1, release_k + 1, pv_wait,
            pv_wait + 1, pack, len(loop)]
    return {step: sum(ln.samples for ln in loop[a:b])
            for step, a, b in zip(STEPS, cuts, cuts[1:])}


def _row(dim: int) -> dict:
    _, _, name, sel = RUNS[dim]
    rows = json.loads((RESULTS / name).read_text())["rows"]
    return next(r for r in rows if all(r.get(k) == v for k, v in sel.items()))


def measured(dim: int) -> list[dict[str, float]]:
    """Per consumer warpgroup (partition order: consumer 0 first), clocks per K/V block one of
    its warps spends in each step, on the H200 (ncu, plain build)."""
    if dim not in RUNS:
        raise ValueError(f"no sampled fa3 launch at head dim {dim}: expected one of {sorted(RUNS)}")
    page, launch, _, _ = RUNS[dim]
    _, lines = sass.read_source(sass.log(page))[launch]
    row = _row(dim)
    scale = sass.clk_scale(lines, int(row["threads"]) // 32, row["clk_per_block"])
    out = []
    for loop in sass.loops(lines):
        steps = measured_steps(loop)
        out.append({k: v * scale / 4 for k, v in steps.items()})   # 4 warps a partition
    if len(out) != TILE[dim][2]:
        raise ValueError(f"d {dim}: {len(out)} consumer loops in the SASS, expected "
                         f"{TILE[dim][2]}")
    return out


def model_config(dim: int) -> AttentionConfig:
    B, H, S = SHAPE[dim]
    bm, bn, consumers = TILE[dim]
    return AttentionConfig(batch=B, heads=H, seqlen=S, headdim=dim, variant="fa3",
                           block_m=bm, block_n=bn, consumers=consumers, stages=2)


def _label(actor_spans, t):
    return next((c for c, s, e in actor_spans if s <= t < e), None)


def model_steps(trace, actor: str, skip: int = 10) -> dict[str, float]:
    """The model's consumer `actor` over its steady blocks: clocks per block in each step.
    Its time between labelled spans is named after what comes next: blocked on its scores
    before the softmax, on P·V before the rescale."""
    starts = sorted({min(i.start for i in trace.intervals if i.actor == actor
                         and i.unit == "tensor" and i.op == "QKᵀ" and i.tile == t)
                     for t in {i.tile for i in trace.intervals if i.actor == actor
                               and i.op == "QKᵀ"}})
    if len(starts) < 2 * skip + 2:
        raise ValueError(f"{actor}: {len(starts)} blocks, need {2 * skip + 2}")
    lo, hi = starts[skip], starts[-skip - 1]
    blocks = len(starts) - 2 * skip - 1
    spans = []
    issue = sorted((s, e) for a, w, s, e in trace.waits if a == actor and w == "wgmma issue")
    for k, (s, e) in enumerate(issue):
        # a block's two groups issue back to back, Q·Kᵀ first (the loop's order)
        nxt = issue[k + 1] if k + 1 < len(issue) else None
        prev = issue[k - 1] if k else None
        first = nxt is not None and abs(nxt[0] - e) < 1e-6
        second = prev is not None and abs(prev[1] - s) < 1e-6
        spans.append(("issue QK" if first or not second else "issue PV", s, e))
    for a, w, s, e in trace.waits:
        if a != actor:
            continue
        if w.startswith(("k.full", "v.full", "turn")):
            spans.append(("wait K, V, turn", s, e))
        elif w.startswith("softmax"):
            spans.append(("softmax", s, e))
    for i in trace.intervals:
        if i.actor == actor and i.unit != "tensor":
            step = {"rescale O": "rescale O", "pack P": "pack P"}.get(
                i.op, "softmax" if i.op.startswith("softmax") else None)
            if step:
                spans.append((step, i.start, i.end))
    spans.sort(key=lambda x: x[1])
    pts = sorted({lo, hi} | {min(hi, max(lo, t)) for _, s, e in spans for t in (s, e)})
    out = dict.fromkeys(STEPS, 0.0)
    out["unnamed"] = 0.0
    for a, b in zip(pts, pts[1:]):
        step = _label(spans, (a + b) / 2)
        if step is None:                            # blocked: on what comes next
            nxt = next((c for c, s, _ in spans if s >= b - 1e-9), None)
            step = {"softmax": "wait scores", "rescale O": "wait PV"}.get(nxt, "unnamed")
        out[step] += b - a
    return {k: v / blocks for k, v in out.items()}


def model(dim: int, hw=None) -> list[dict[str, float]]:
    """Per consumer warpgroup, the model's clocks per K/V block in each step (`h200`, the
    kernel's tile, at the clock the model gives it)."""
    hw = hw or hardware.get("h200")
    cfg = attention.prepare(model_config(dim), hw)
    n = math.ceil(cfg.seqlen / cfg.block_n)

    def steady(h):
        return attention.simulate(cfg, h, n)
    _, trace = steady(clocked(hw, steady))
    return [model_steps(trace, f"consumer{w}") for w in range(cfg.consumers)]


def table(dim: int, hw=None) -> str:
    meas, mod = measured(dim), model(dim, hw)
    head = "  ".join(f"{'meas c' + str(w):>8s} {'model':>6s}" for w in range(len(meas)))
    lines = [f"fa3 d {dim}, {'×'.join(map(str, TILE[dim][:2]))} tile: clk per K/V block, one warp"
             f" of each consumer", f"  {'step':16s} {head}"]
    for step in (*STEPS, "unnamed"):
        cells = "  ".join(f"{m.get(step, 0.0):8.0f} {p.get(step, 0.0):6.0f}"
                          for m, p in zip(meas, mod))
        lines.append(f"  {step:16s} {cells}")
    cells = "  ".join(f"{sum(m.values()):8.0f} {sum(p.values()):6.0f}" for m, p in zip(meas, mod))
    lines.append(f"  {'block (loop)':16s} {cells}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dim", type=int, action="append", help="head dim (64, 128, 256; all if none)")
    a = p.parse_args(argv)
    for dim in a.dim or sorted(RUNS):
        print(table(dim))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
