"""The model's timeline under the machine's, lane by lane.

`instruments/trace.py` records Proton scopes of our warp-specialized kernels on the H200; their
trimmed traces and summaries are in `results/traces/`. Here the model runs the same kernel —
same variant, tile, ring depth and loop length, `h200` preset — and its trace is read as the same
lanes: one per role (producer, consumer 0, consumer 1), each a list of named spans with the kernel's
scope names. Both sides then go through the same three measures (`records/spans.py`): per role and
scope the busy fraction over a steady window, the mean span, and the iteration period (a K/V block
for attention, a k-step for GEMM), in SM clocks.

How a model actor becomes a lane. Its barrier waits are spans of their own ("wait K" for
`k.full[s]`, "wait slot" for an `empty`, "wait turn", ...); its softmax, rescale and pack pieces
on the FMA pipe and SFU, and the softmax's row max and dependency stall, are "softmax"; the
epilogue is "epilogue".
Whatever time is left between two such spans is what the warp spent blocked on its own wgmma:
it is named after the GEMM whose last instruction ran in it ("QK", "PV", "MMA"). That is exactly
what the kernel's scope around `warpgroup_mma` + `warpgroup_mma_wait` measures. The producer's
TMA issue takes no time in the model, so its lane is its waits.

    python -m fidelity.lanes [--out DIR]     table, and one figure per kernel
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from sim import attention, gemm, hardware
from sim.config import SCHEDULE_SWITCHES, AttentionConfig, GemmConfig
from sim.predict import clocked
from records.spans import Span, busy_fractions, mean_durations, median_step, steady_window
from sim.trace import Trace

ROLES = ("producer", "consumer0", "consumer1")
TENSOR_OPS = {"QKᵀ": "QK", "PV": "PV", "MMA": "MMA"}
MAIN_SCOPES = {"attention": ("QK", "softmax", "PV", "wait K", "wait V", "wait turn", "wait slot"),
               "gemm": ("MMA", "epilogue", "wait full", "wait turn", "wait slot")}
ITERATION = {"attention": "QK", "gemm": "MMA"}


def _wait_name(what: str) -> str | None:
    if "empty" in what:
        return "wait slot"
    if what.startswith("k.full"):
        return "wait K"
    if what.startswith("v.full"):
        return "wait V"
    if what.startswith("ab.full"):
        return "wait full"
    if what == "turn":
        return "wait turn"
    if what.startswith("softmax"):
        return "softmax"
    return None                                     # q_full: before the loop


def _unit_name(op: str) -> str | None:
    if op.startswith("softmax") or op in ("rescale O", "pack P"):
        return "softmax"        # (the ws-family kernels scope their pack inside `PV`)
    if op in ("epilogue", "store O", "store C"):
        return "epilogue"
    return None                                     # TMA loads: the copy engine's, not a warp's


def lanes(trace: Trace) -> dict[str, list[Span]]:
    """The model's trace as one lane per role, in the kernel's scope names."""
    out = {}
    for actor in ROLES:
        spans = [(n, s, e) for a, what, s, e in trace.waits if a == actor
                 and (n := _wait_name(what))]
        spans += [(n, i.start, i.end) for i in trace.intervals if i.actor == actor
                  and i.unit != "tensor" and (n := _unit_name(i.op))]
        spans.sort(key=lambda x: x[1])
        # when each of the actor's wgmma groups finished (its last instruction's end)
        ends: dict = {}
        for i in trace.intervals:
            if i.actor == actor and i.unit == "tensor":
                key = (TENSOR_OPS[i.op], i.tile)
                ends[key] = max(ends.get(key, 0.0), i.end)
        done = sorted((t, op) for (op, _), t in ends.items())
        lane: list[Span] = []
        for n, s, e in spans:
            if lane and s > lane[-1][2]:
                lo = lane[-1][2]
                inside = [(t, op) for t, op in done if lo < t <= s]
                if inside:
                    # blocked on its own GEMMs: one span per group, cut where each one finished
                    cuts = [lo] + [t for t, _ in inside[:-1]] + [s]
                    lane += [(op, a, b) for (_, op), a, b in zip(inside, cuts, cuts[1:])]
                elif lane[-1][0] == n and n in ("softmax", "epilogue"):
                    lane.append((n, lo, s))                 # one softmax, queued behind the other's
            lane.append((n, s, e))
        if lane:
            out[actor] = _merge(lane)
    return out


def _merge(lane: list[Span]) -> list[Span]:
    """Adjacent softmax (epilogue) pieces become one span: the kernel's scope is one per block.
    GEMM spans stay one per wgmma group, waits one per wait, as the kernel's scopes are."""
    out: list[Span] = []
    for n, s, e in lane:
        if out and out[-1][0] == n and n in ("softmax", "epilogue") and s <= out[-1][2] + 1e-9:
            out[-1] = (n, out[-1][1], max(e, out[-1][2]))
        else:
            out.append((n, s, e))
    return out


def iteration_starts(trace: Trace, workload: str) -> list[float]:
    """When consumer 0's GEMM of each block (k-step) started on the tensor core."""
    op = "QKᵀ" if workload == "attention" else "MMA"
    first: dict = {}
    for i in trace.intervals:
        if i.actor == "consumer0" and i.unit == "tensor" and i.op == op:
            first[i.tile] = min(first.get(i.tile, math.inf), i.start)
    return sorted(first.values())


def consumer_phase(ln: dict[str, list[Span]], skip: int = 4) -> float:
    """How far apart the two consumers run: the median, over consumer 1's steady blocks, of the
    clocks from its Q·Kᵀ span's start to the nearest of consumer 0's (0: they issue together and
    the two GEMMs collide; half a block: they alternate). Reads the model's lanes (`lanes`) and a
    trace's (`records.trace.read_events`) alike."""
    q0 = [s for n, s, _ in ln["consumer0"] if n == "QK"]
    q1 = sorted(s for n, s, _ in ln["consumer1"] if n == "QK")
    if min(len(q0), len(q1)) < 2 * skip + 2:
        raise ValueError(f"need {2 * skip + 2} Q·Kᵀ spans a consumer, got {len(q0)} and {len(q1)}")
    offsets = sorted(min(abs(a - b) for b in q0) for a in q1[skip:-skip])
    return offsets[len(offsets) // 2]


# --- the model at the kernel's configuration ----------------------------------------------------
def model_config(summary: dict):
    """The model's configuration of the traced kernel: its variant, shape, tile and schedule
    switches (each summary carries the tile and the softmax switches the kernel ran,
    `instruments/trace.py`)."""
    v, t = summary["variant"], summary["tile"]
    if summary["workload"] == "attention":
        B, H, S, D = summary["traced_shape"]
        # the build's softmax switches (a summary lists them) that move a step of the model's
        # schedule; the others reorder arithmetic inside a step (sim/config.py)
        switches = tuple(n for n in summary.get("softmax", ())
                         if v in SCHEDULE_SWITCHES.get(n, ()))
        return AttentionConfig(batch=B, heads=H, seqlen=S, headdim=D, variant=v,
                               block_m=t["BM"], block_n=t["BN"], consumers=t["consumers"],
                               stages=t["stages"], switches=switches)
    M, N, K = summary["traced_shape"]
    return GemmConfig(m=M, n=N, k=K, variant=v, block_m=t["BM"], block_n=t["BN"],
                      block_k=t["BK"], stages=t["stages"], consumers=2)


def run_model(summary: dict, hw) -> tuple[Trace, dict]:
    """Simulate one CTA of the traced kernel, at the clock the model gives it (`predict.clocked`);
    (trace, {"blocks" or "k_blocks", "tiles"})."""
    cfg = model_config(summary)
    if summary["workload"] == "attention":
        cfg = attention.prepare(cfg, hw)
        n = math.ceil(cfg.seqlen / cfg.block_n)
        masked = 1 if cfg.seqlen % cfg.block_n else 0

        def steady(h):
            return attention.simulate(cfg, h, n, masked)
        _, trace = steady(clocked(hw, steady))
        return trace, {"blocks": n}
    cfg = gemm.prepare(cfg, hw)
    k_blocks = math.ceil(cfg.k / cfg.block_k)
    tiles = 6 if gemm.module(cfg.variant).COOPERATIVE is False else 3  # 3 tiles of consumer 0

    def steady(h):
        return gemm.simulate(cfg, h, tiles, k_blocks)
    _, trace = steady(clocked(hw, steady))
    return trace, {"k_blocks": k_blocks, "tiles": tiles}


def model_stats(trace: Trace, workload: str, skip: int) -> dict:
    """The summary's measures for the model's CTA (clk), over the same kind of window."""
    ln = lanes(trace)
    starts = iteration_starts(trace, workload)
    if workload == "attention":
        lo, hi, iters = steady_window(starts, skip)
        period = (hi - lo) / iters
    else:
        # consumer 0's second and third tile: a whole tile period away from the start
        from records.trace import tile_starts
        firsts = tile_starts(ln["consumer0"])
        lo, hi = firsts[1], firsts[2]
        period = median_step(starts, (lo, hi))
    out = {"window_clk": [lo, hi], "period_clk": period, "roles": {}}
    if workload == "gemm":
        out["tile_period_clk"] = hi - lo
    for role, lane in ln.items():
        busy, mean = busy_fractions(lane, (lo, hi)), mean_durations(lane, (lo, hi))
        out["roles"][role] = {n: {"busy": busy[n], "mean_clk": mean.get(n)} for n in busy}
    return out


# --- model against measured ---------------------------------------------------------------------
def compare(summary: dict, hw=None) -> dict:
    """Model vs measured for one traced kernel: per role and main scope the busy fraction and
    mean span, and the iteration period, each with the model's relative error."""
    from records.trace import SKIP
    hw = hw or hardware.get("h200")
    trace, _ = run_model(summary, hw)
    model = model_stats(trace, summary["workload"], SKIP)
    rows = []
    for role in ROLES:
        meas_r, mod_r = summary["roles"].get(role, {}), model["roles"].get(role, {})
        for scope in MAIN_SCOPES[summary["workload"]]:
            if scope not in meas_r and scope not in mod_r:
                continue
            m = meas_r.get(scope, {"busy": 0.0, "mean_clk": None})
            p = mod_r.get(scope, {"busy": 0.0, "mean_clk": None})
            rows.append({"role": role, "scope": scope, "measured_busy": m["busy"],
                         "model_busy": p["busy"], "busy_diff": p["busy"] - m["busy"],
                         "busy_error": p["busy"] / m["busy"] - 1 if m["busy"] > 0 else None,
                         "measured_mean_clk": m["mean_clk"], "model_mean_clk": p["mean_clk"]})
    period = {"measured_clk": summary["period_clk"], "model_clk": model["period_clk"],
              "error": model["period_clk"] / summary["period_clk"] - 1}
    # The scopes slow the kernel down (instruments/trace.py times it with and without them at the
    # traced shape); the period without them, if the slowdown is spread evenly over the blocks,
    # is this. Not for the GEMMs: their k-step runs at the tensor core's own pace (1026 clk for
    # 1024 of math), so the scopes' cost lands elsewhere and the even spread would put the
    # k-step under its floor.
    over = summary.get("timing", {}).get("traced_shape", {}).get("overhead")
    if over is not None and summary["workload"] == "attention":
        period["overhead"] = over
        period["measured_unscoped_clk"] = summary["period_clk"] / (1 + over)
        period["error_unscoped"] = model["period_clk"] / period["measured_unscoped_clk"] - 1
    out = {"kernel": summary["kernel"], "hardware": hw.name, "period": period, "rows": rows,
           "model": model}
    if "tile_period_clk" in summary:
        out["tile_period"] = {"measured_clk": summary["tile_period_clk"],
                              "model_clk": model["tile_period_clk"],
                              "error": model["tile_period_clk"] / summary["tile_period_clk"] - 1}
    return out


def table(cmp: dict) -> str:
    p = cmp["period"]
    unit = "K/V block" if any(r["scope"] == "QK" for r in cmp["rows"]) else "k-step"
    # one clause a line, so that no line is wider than the rows (a notebook's output wraps)
    lines = [(f"{cmp['kernel']}: period per {unit} measured {p['measured_clk']:.0f} clk, model "
             f"{p['model_clk']:.0f} clk ({p['error']:+.1%})")]
    if "measured_unscoped_clk" in p:
        lines.append(f"  without the scopes ({p['overhead']:+.0%}) measured "
                     f"~{p['measured_unscoped_clk']:.0f} clk, model {p['error_unscoped']:+.1%}")
    if "tile_period" in cmp:
        t = cmp["tile_period"]
        lines.append(f"  tile period measured {t['measured_clk']:.0f} clk, model "
                     f"{t['model_clk']:.0f} clk ({t['error']:+.1%})")
    lines.append(f"  {'role':10s} {'scope':10s} {'busy meas':>9s} {'model':>6s} {'diff':>6s} "
                 f"{'mean clk meas':>13s} {'model':>6s}")
    for r in cmp["rows"]:
        mm = "" if r["measured_mean_clk"] is None else f"{r['measured_mean_clk']:.0f}"
        pm = "" if r["model_mean_clk"] is None else f"{r['model_mean_clk']:.0f}"
        lines.append(f"  {r['role']:10s} {r['scope']:10s} {r['measured_busy']:9.1%} "
                     f"{r['model_busy']:6.1%} {r['busy_diff']:+6.1%} {mm:>13s} {pm:>6s}")
    return "\n".join(lines)


def figure(name: str, iterations: int = 4, where: Path | None = None, hw=None):
    """Measured lanes (one CTA of the committed trace) on top, the model's below, on a shared
    axis of SM clocks from the start of a steady-state iteration; `iterations` of them shown."""
    import matplotlib.pyplot as plt

    from records import trace as kt
    from sim.plot import lane_rows
    kw = {} if where is None else {"where": where}
    raw, summary = kt.load(name, **kw)
    hw = hw or hardware.get("h200")
    wl = summary["workload"]
    ctas = kt.read_events(raw)
    meas = ctas[min(ctas)]["lanes"]
    mtrace, _ = run_model(summary, hw)
    model = lanes(mtrace)
    if wl == "attention":
        m_starts = kt.iteration_starts(meas, wl)
        p_starts = iteration_starts(mtrace, wl)
        m0, p0 = m_starts[kt.SKIP], p_starts[kt.SKIP]
        span = max(summary["period_clk"], 1.0) * iterations
    else:
        m0 = kt.tile_starts(meas["consumer0"])[-2]
        p0 = kt.tile_starts(model["consumer0"])[1]
        span = (summary.get("tile_period_clk") or summary["period_clk"]) * 1.3
    rows = [(f"measured {r}", [(n, s - m0, e - m0) for n, s, e in meas.get(r, [])])
            for r in ROLES if r in meas]
    rows += [(f"model {r}", [(n, s - p0, e - p0) for n, s, e in model.get(r, [])])
             for r in ROLES if r in model]
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) + 1.4))
    lane_rows(ax, rows, (0.0, span))
    n_model = sum(r.startswith("model") for r, _ in rows)
    ax.axhline(n_model - 0.5, color="black", linewidth=0.8)
    cmp = compare(summary, hw)
    ax.set_title(f"{name}: measured (H200, Proton) above, model ({hw.name}) below — period "
                 f"{cmp['period']['measured_clk']:.0f} vs {cmp['period']['model_clk']:.0f} clk")
    fig.tight_layout()
    return fig


def main(argv=None) -> int:
    from records import trace as kt
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, help="write one figure per kernel here")
    p.add_argument("--hardware", default="h200")
    a = p.parse_args(argv)
    hw = hardware.get(a.hardware)
    for name in kt.committed():
        _, summary = kt.load(name)
        print(table(compare(summary, hw)))
        if a.out:
            a.out.mkdir(parents=True, exist_ok=True)
            figure(name, hw=hw).savefig(a.out / f"{name}.png", dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

