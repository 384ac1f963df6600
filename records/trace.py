"""Proton traces read back: lanes per CTA and role, the steady window, the summary a recording
writes and the CPU tests and ``fidelity/lanes.py`` re-derive from the committed files.

A trace is Proton's Chrome/Perfetto JSON of one kernel (``instruments/trace.py`` records it on a
Hopper GPU, ``results/traces/`` keeps them). Which warps: one per role (``ROLES``): warp 0 is
consumer 0 (the default partition), warp 4 consumer 1, warp 10 the producer.

Times: Proton records ``clock64`` per scope edge; its Chrome writer divides cycles by a nominal
1000 MHz ("Frequency (MHz)" in each event's args), so ``dur × freq`` is SM clocks. ns come from
each CTA's globaltimer stamps ("Init Time (ns)", "Post Final Time (ns)"): clock = CTA cycle span
/ CTA ns span (a lower bound: the ns span also holds the CTA's start-up and the buffer dump).
Plain Python: no GPU, no kernels.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from . import RESULTS as _RESULTS
from .spans import busy_fractions, mean_durations, median_step, steady_window

RESULTS = _RESULTS / "traces"
ROLES = {0: "consumer0", 4: "consumer1", 10: "producer"}
KEEP_CTAS = {"attention": 2, "gemm": 1}  # CTAs kept in the committed trace (≤ ~300 KB each)
SKIP = 4                 # iterations left out at each end of a CTA's loop (prologue, drain)

# The scope that starts an iteration: a K/V block (attention) or a k-step (GEMM).
ITERATION = {"attention": "QK", "gemm": "MMA"}


def read_events(trace: dict) -> dict[int, dict]:
    """Proton's Chrome trace -> {cta: {"lanes": {role: [(scope, start_clk, end_clk)]},
    "init_ns", "final_ns"}}; times relative to the CTA's first event."""
    ctas: dict[int, dict] = {}
    for ev in trace["traceEvents"]:
        if ev.get("ph") != "X":
            continue
        cta = re.search(r"CTA(\d+)", str(ev.get("pid", "")))
        warp = re.search(r"warp (\d+)", str(ev.get("tid", "")))
        if not cta or not warp or int(warp.group(1)) not in ROLES:
            continue
        args = ev.get("args", {})
        freq = float(args.get("Frequency (MHz)", 1000.0))   # MHz the writer divided cycles by
        c = ctas.setdefault(int(cta.group(1)), {"lanes": {}, "init_ns": None, "final_ns": None})
        if "Init Time (ns)" in args:
            c["init_ns"], c["final_ns"] = args["Init Time (ns)"], args.get("Post Final Time (ns)")
        start = ev["ts"] * freq
        c["lanes"].setdefault(ROLES[int(warp.group(1))], []).append(
            (ev["name"], start, start + ev["dur"] * freq))
    for c in ctas.values():
        c["t0"] = t0 = min(s for lane in c["lanes"].values() for _, s, _ in lane)
        c["lanes"] = {r: sorted(((n, s - t0, e - t0) for n, s, e in lane), key=lambda x: x[1])
                      for r, lane in sorted(c["lanes"].items())}
    return ctas


def iteration_starts(lanes: dict, workload: str) -> list[float]:
    return [s for n, s, _ in lanes.get("consumer0", []) if n == ITERATION[workload]]


def tile_starts(lane: list) -> list[float]:
    """GEMM: the first MMA of each tile in a consumer's lane (the MMA after an epilogue or a wait
    for the turn). The first MMA in the lane counts too, though it may be mid-tile: with a
    circular buffer the events before it were overwritten."""
    firsts, prev = [], None
    for n, s, _ in lane:
        if n == "MMA" and prev in (None, "epilogue", "wait turn"):
            firsts.append(s)
        if n in ("MMA", "epilogue", "wait turn"):
            prev = n
    return firsts


def gemm_window(lanes: dict) -> tuple[float, float, int]:
    """GEMM: from consumer 0's first MMA of one tile to the first of its next, the last such
    pair in the lane (the circular buffer keeps the end of the run): a whole tile period, its
    epilogue and (pingpong) its wait for the turn included."""
    lane = lanes["consumer0"]
    firsts = tile_starts(lane)
    if len(firsts) < 3:
        raise ValueError(f"fewer than two whole tiles in consumer 0's lane ({len(firsts)} starts)")
    mmas = [s for n, s, _ in lane if n == "MMA" and firsts[-2] <= s < firsts[-1]]
    return firsts[-2], firsts[-1], len(mmas)


def tiles_of(lane: list) -> list[list[tuple[float, float, float]]]:
    """GEMM consumer lane -> per tile, per k-step: (wait-full start, wait-full end, MMA end)."""
    tiles, cur, wait = [], None, None
    for n, s, e in lane:
        if n in ("epilogue", "wait turn"):
            cur = None
        elif n == "wait full":
            wait = (s, e)
        elif n == "MMA" and wait is not None:
            if cur is None:
                cur = []
                tiles.append(cur)
            cur.append((wait[0], wait[1], e))
            wait = None
    return tiles


def hand_offs(lanes: dict, stages: int) -> list[dict]:
    """GEMM: each refill of the ring, in clocks. A consumer's MMA scope of k-step k ends with
    k-1 retired, and right after it the consumer arrives on k-1's `empty`; the slot's next block
    is k-1+stages, which the same consumer waits for at its `wait full` (same tile only). Per
    refill: `hand_off` — release to the consumer passing `full` of the refilled block; `exposed`
    — that `wait full`'s length; and, where the producer was blocked on that `empty` when it was
    released: `wake` (release → the producer's `wait slot` ends), `issue` (its `TMA issue`
    scope) and `flight` (issue end → the consumer passes `full`: the loaded TMA latency, read
    only where the consumer was still waiting when the data landed, exposed > 0)."""
    prod = lanes.get("producer", [])
    waits = [(s, e) for n, s, e in prod if n == "wait slot"]
    issues = [(s, e) for n, s, e in prod if n == "TMA issue"]
    out = []
    for role in ("consumer0", "consumer1"):
        for tile in tiles_of(lanes.get(role, [])):
            for k in range(1, len(tile) - stages + 1):
                release = tile[k][2]
                w0, w1, _ = tile[k - 1 + stages]
                rec = {"hand_off": w1 - release, "exposed": w1 - w0}
                blocked = [(s, e) for s, e in waits if s <= release <= e]
                if blocked:
                    ws_end = blocked[0][1]
                    nxt = [(s, e) for s, e in issues if s >= ws_end]
                    if nxt:
                        rec.update(wake=ws_end - release, issue=nxt[0][1] - nxt[0][0],
                                   flight=w1 - nxt[0][1])
                out.append(rec)
    return out


def hand_off_summary(ctas: dict, stages: int) -> dict:
    """Medians of `hand_offs` over every CTA; `flight` only over refills the consumer waited for
    (exposed above one probe, 150 clk)."""
    recs = [r for c in ctas.values() for r in hand_offs(c["lanes"], stages)]
    out = {"refills": len(recs)}
    for key in ("hand_off", "exposed", "wake", "issue"):
        xs = [r[key] for r in recs if key in r]
        out[key] = {"median": _median(xs), "n": len(xs)}
    fl = sorted(r["flight"] for r in recs if "flight" in r and r["exposed"] > 150)
    out["flight"] = {"median": _median(fl), "n": len(fl),
                     "p10": fl[len(fl) // 10] if fl else None,
                     "p90": fl[len(fl) * 9 // 10] if fl else None}
    return out


def cta_stats(lanes: dict, workload: str) -> dict:
    """Busy fraction and mean duration per role and scope, and the iteration period, over the
    steady window of one CTA (clk)."""
    if workload == "attention":
        lo, hi, iters = steady_window(iteration_starts(lanes, workload), SKIP)
    else:
        lo, hi, iters = gemm_window(lanes)
    out = {"window_clk": [lo, hi], "iterations": iters,
           "period_clk": (hi - lo) / iters if workload == "attention"
           else median_step(iteration_starts(lanes, workload), (lo, hi)),
           "roles": {}}
    if workload == "gemm":
        out["tile_period_clk"] = hi - lo
    for role, lane in lanes.items():
        busy, mean = busy_fractions(lane, (lo, hi)), mean_durations(lane, (lo, hi))
        out["roles"][role] = {n: {"busy": busy[n], "mean_clk": mean.get(n)} for n in busy}
    return out


def cta_phases(lanes: dict) -> dict:
    """Where one CTA's time goes outside its loop (clk from its first recorded event, the
    producer's first wait): consumer 0's Q landed (the end of `wait Q`), its first `QK`, its
    `epilogue` start and length, and the CTA's last event. Attention kernels with the `wait Q`
    and `epilogue` scopes only."""
    c0 = lanes.get("consumer0", [])
    q = [e for n, _, e in c0 if n == "wait Q"]
    qk = [s for n, s, _ in c0 if n == "QK"]
    ep = [(s, e) for n, s, e in c0 if n == "epilogue"]
    if not (q and qk and ep):
        raise ValueError("no wait Q / QK / epilogue scopes in consumer 0")
    return {"q_landed": q[0], "first_qk": qk[0], "epilogue_start": ep[-1][0],
            "epilogue": ep[-1][1] - ep[-1][0], "blocks": len(qk),
            "end": max(e for lane in lanes.values() for _, _, e in lane)}


def phases_summary(ctas: dict[int, dict]) -> dict | None:
    """Medians over CTAs of `cta_phases` (None without the scopes)."""
    per = []
    for c in ctas.values():
        try:
            per.append(cta_phases(c["lanes"]))
        except ValueError:
            continue
    if not per:
        return None
    return {k: _median([p[k] for p in per]) for k in per[0]} | {"ctas": len(per)}


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(ctas: dict[int, dict], workload: str) -> dict:
    """Medians over CTAs of `cta_stats`, plus the SM clock each CTA's stamps give."""
    per = {}
    clocks = []
    for cta, c in sorted(ctas.items()):
        try:
            per[cta] = cta_stats(c["lanes"], workload)
        except (ValueError, KeyError):
            continue                                    # a CTA too short for a steady window
        span = max(e for lane in c["lanes"].values() for _, _, e in lane)
        if c.get("init_ns") is not None and c.get("final_ns") is not None:
            ns = c["final_ns"] - c["init_ns"]
            if ns > 0:
                clocks.append(span / ns)
    if not per:
        raise ValueError("no CTA had a steady window")
    roles: dict = {}
    for st in per.values():
        for role, scopes in st["roles"].items():
            for n in scopes:
                roles.setdefault(role, {}).setdefault(n, None)
    ghz = _median(clocks)
    spans = [max(e for lane in c["lanes"].values() for _, _, e in lane) for c in ctas.values()]
    out = {"ctas": len(per), "clock_ghz_from_stamps": ghz, "cta_span_clk": _median(spans),
           "period_clk": _median([s["period_clk"] for s in per.values()]),
           "iterations_per_window": _median([s["iterations"] for s in per.values()]),
           "roles": {}, "phases": phases_summary(ctas)}
    if workload == "gemm":
        out["tile_period_clk"] = _median([s["tile_period_clk"] for s in per.values()])
    for role, names in roles.items():
        out["roles"][role] = {}
        for n in names:
            busy = _median([s["roles"].get(role, {}).get(n, {}).get("busy", 0.0) for s in per.values()])
            mean = _median([s["roles"].get(role, {}).get(n, {}).get("mean_clk") for s in per.values()])
            out["roles"][role][n] = {"busy": busy, "mean_clk": mean,
                                     "mean_ns": mean / ghz if mean is not None and ghz else None}
    if ghz:
        out["period_ns"] = out["period_clk"] / ghz
        if "tile_period_clk" in out:
            out["tile_period_ns"] = out["tile_period_clk"] / ghz
    return out


def add_clock(summary: dict, sms: int = 132) -> dict:
    """SM clock during the traced kernel, estimated as a CTA's cycles over the scoped kernel's
    time at the traced shape (a lower bound: the time also holds the launch and the CTAs' start
    skew), and the ns figures it gives. Proton 3.6's trace carries no per-CTA globaltimer stamps
    here (only "Finalization Time"), and nvidia-smi's 2 s samples (1965-1980 MHz) miss the
    power-capped clock under load. Attention: one wave, so a CTA's span is the kernel's. GEMM
    (persistent, circular buffer): a CTA's cycles are its tiles times the tile period."""
    t = summary.get("timing", {}).get("traced_shape", {})
    if "scoped_ms" not in t:
        return summary
    if summary["workload"] == "attention":
        cycles = summary.get("cta_span_clk")
    else:
        M, N, _ = summary["traced_shape"]
        tile = summary["tile"]
        tiles = -(-M // tile["BM"]) * -(-N // tile["BN"])
        per_window = 2 if summary["variant"] == "ws_pingpong" else 1   # consumer 0's tiles: every other
        cycles = summary["tile_period_clk"] * tiles / sms / per_window
    if not cycles:
        return summary
    ghz = cycles / (t["scoped_ms"] * 1e6)
    summary["clock_ghz_estimate"] = ghz
    summary["period_ns"] = summary["period_clk"] / ghz
    if "tile_period_clk" in summary:
        summary["tile_period_ns"] = summary["tile_period_clk"] / ghz
    for scopes in summary["roles"].values():
        for v in scopes.values():
            v["mean_ns"] = v["mean_clk"] / ghz if v.get("mean_clk") is not None else None
    return summary


def trim(trace: dict, workload: str, keep: int | None = None) -> dict:
    """The trace with only the first `keep` CTAs' events of the sampled warps, the fields a viewer
    needs (call stacks and colours dropped; each CTA's stamps kept on its first event), and for
    the GEMMs only the time from consumer 0's third-last tile start on (what `gemm_window` reads;
    the whole buffer would be ~1.5 MB a CTA)."""
    ctas = sorted(read_events(trace))[:keep or KEEP_CTAS[workload]]
    cut = {}
    if workload == "gemm":
        for cta, c in read_events({"traceEvents": [
                ev for ev in trace["traceEvents"] if _cta(ev) in ctas]}).items():
            firsts = tile_starts(c["lanes"].get("consumer0", []))
            cut[cta] = firsts[-3] + c["t0"] if len(firsts) >= 3 else None
    out, seen = [], set()
    for ev in trace["traceEvents"]:
        cta, w = _cta(ev), re.search(r"warp (\d+)", str(ev.get("tid", "")))
        if ev.get("ph") != "X" or cta not in ctas or not w or int(w.group(1)) not in ROLES:
            continue
        freq = float(ev.get("args", {}).get("Frequency (MHz)", 1000.0))
        if cut.get(cta) is not None and (ev["ts"] + ev["dur"]) * freq < cut[cta]:
            continue
        e = {"name": ev["name"], "ph": "X", "pid": ev["pid"], "tid": ev["tid"],
             "ts": ev["ts"], "dur": ev["dur"]}
        if cta not in seen or freq != 1000.0:
            e["args"] = {k: v for k, v in ev.get("args", {}).items() if "call_stack" not in k}
            seen.add(cta)
        out.append(e)
    return {"traceEvents": out, "displayTimeUnit": trace.get("displayTimeUnit", "ns")}


def _cta(ev: dict) -> int | None:
    m = re.search(r"CTA(\d+)", str(ev.get("pid", "")))
    return int(m.group(1)) if m else None


def load(name: str, where: Path = RESULTS) -> tuple[dict, dict]:
    """(trimmed trace, summary) of one kernel as committed."""
    return (json.loads((where / f"{name}.trace.json").read_text()),
            json.loads((where / f"{name}.summary.json").read_text()))


def committed(where: Path = RESULTS) -> list[str]:
    """The names of the kernels whose trace and summary are committed under `where`."""
    return sorted(p.name.removesuffix(".summary.json") for p in where.glob("*.summary.json")
                  if (where / p.name.replace(".summary.", ".trace.")).exists())
