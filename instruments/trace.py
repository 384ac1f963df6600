"""Proton timelines of the warp-specialized kernels: what each warpgroup does, when.

    python -m instruments.trace --out DIR       # on a Hopper GPU: traces, summaries, overhead

runs each of the five kernels once under Proton's instrumentation backend with the kernels'
``PROFILE`` scopes compiled in (``kernels/scopes.py``), and writes per kernel

* ``<name>.trace.json`` — the Chrome/Perfetto trace, trimmed to ``KEEP_CTAS`` CTAs;
* ``<name>.summary.json`` — per role (producer, consumer 0/1) and scope: busy fraction, mean
  duration and the iteration period over the steady state of every CTA (medians over CTAs), in SM
  clocks and in ns, and the instrumentation overhead (the same launch timed with and without the
  scopes).

Which warps: Proton samples one warp per role (``SAMPLED_WARPS``): warp 0 is consumer 0 (the
default partition), warp 4 consumer 1, warp 10 the producer. Triton 3.6 puts a 4-warp worker at
warps 4-7 and pads the 1-warp producer's warpgroup to warps 8-11 with the producer at warp 10 (read
off the partition dispatch table in the PTX; ``tests/kernels/test_trace_compile.py`` checks it for
all five kernels: sampling warp 8, the padding, records no producer events). In the
cooperative GEMM (``ws``) warps 0-3 and 4-7 are the two warpgroups of one consumer partition.

Sizes: attention at FA3 tab. 2's shape but one wave of CTAs (B 1, H 2, S 8448, d 128: 132 CTAs on
132 SMs, the first wave of the B 4 H 16 launch), so the trace stays a few tens of MB before
trimming; the overhead is timed at both that and the full shape. GEMM 8192³ (persistent, one CTA
per SM) with a circular buffer that keeps each warp's last ~2 tiles of events.

Times: Proton records ``clock64`` per scope edge; its Chrome writer divides cycles by a nominal
1000 MHz ("Frequency (MHz)" in each event's args), so ``dur × freq`` is SM clocks. ns come from
each CTA's globaltimer stamps ("Init Time (ns)", "Post Final Time (ns)"): clock = CTA cycle span
/ CTA ns span (a lower bound: the ns span also holds the CTA's start-up and the buffer dump).

The parsing and the summary (everything below ``# --- reading traces``) are plain Python, so the
CPU tests and ``fidelity/lanes.py`` run them on the committed files.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from . import RESULTS as _RESULTS
from .spans import busy_fractions, mean_durations, median_step, steady_window

RESULTS = _RESULTS / "traces"
SAMPLED_WARPS = "0,4,10"
ROLES = {0: "consumer0", 4: "consumer1", 10: "producer"}
KEEP_CTAS = {"attention": 2, "gemm": 1}  # CTAs kept in the committed trace (≤ ~300 KB each)
SKIP = 4                 # iterations left out at each end of a CTA's loop (prologue, drain)
# Bytes of the global buffer per sampled warp (Proton needs a power of two per segment). A scope
# costs two 8-byte records: 16 KiB holds 1024 scopes — a whole attention CTA (66 blocks × ≤ 7
# scopes), the last ~2 tiles of a GEMM warp (2 scopes per k-step, 128 k-steps a tile).
SEGMENT = 16 * 1024

# name -> what runs. Attention shapes are (B, H, S, d); "full" is FA3 tab. 2's for the overhead.
KERNELS = {
    "attention_ws": {"workload": "attention", "variant": "ws", "shape": (1, 2, 8448, 128),
                     "full": (4, 16, 8448, 128), "buffer": SEGMENT * 3},
    "attention_ws_pingpong": {"workload": "attention", "variant": "ws_pingpong",
                              "shape": (1, 2, 8448, 128), "full": (4, 16, 8448, 128),
                              "buffer": SEGMENT * 3},
    "attention_fa3": {"workload": "attention", "variant": "fa3", "shape": (1, 2, 8448, 128),
                      "full": (4, 16, 8448, 128), "buffer": SEGMENT * 3},
    "gemm_ws": {"workload": "gemm", "variant": "ws", "shape": (8192, 8192, 8192),
                "full": (8192, 8192, 8192), "buffer": SEGMENT * 3},
    "gemm_ws_pingpong": {"workload": "gemm", "variant": "ws_pingpong", "shape": (8192, 8192, 8192),
                         "full": (8192, 8192, 8192), "buffer": SEGMENT * 3},
}
# Where the model needs more than the five: shallow rings whose refills the consumers wait for, and
# the in-line kernels (no producer: warps 0 and 4 are the two 64-row halves of the one compute
# partition). Recorded on request (`--only`), not by default.
PROBES = {
    "gemm_ws_s2": {**KERNELS["gemm_ws"], "variant": "ws", "stages": 2},
    "gemm_ws_pingpong_s2": {**KERNELS["gemm_ws_pingpong"], "stages": 2},
    "gemm_ws_pingpong_s3": {**KERNELS["gemm_ws_pingpong"], "stages": 3},
    "attention_sequential": {**KERNELS["attention_ws"], "variant": "sequential", "warps": "0,4",
                             "buffer": SEGMENT * 2},
    "attention_pipelined": {**KERNELS["attention_ws"], "variant": "pipelined", "warps": "0,4",
                            "buffer": SEGMENT * 2},
    "attention_overlap": {**KERNELS["attention_ws"], "variant": "overlap", "warps": "0,4",
                          "buffer": SEGMENT * 2},
    # fa3 at S 1K (8 K/V blocks a CTA; 1024 CTAs at d 128, 512 at d 256: 4-8 waves), where a CTA's time outside its loop is
    # 9-17 K clk on the machine (`results/h200-stall-sweep.json`): the `wait Q` and `epilogue`
    # scopes and the CTAs' phases (`cta_phases`)
    "attention_fa3_s1k": {**KERNELS["attention_fa3"], "shape": (8, 16, 1024, 128),
                          "full": (16, 16, 1024, 128)},
    "attention_fa3_s1k_d256": {**KERNELS["attention_fa3"], "shape": (8, 8, 1024, 256),
                               "full": (16, 8, 1024, 256)},
    # fa3 at d 256 (128 x 64 blocks, 132 CTAs: one wave), where the model's block is 12 % short
    # of Nsight Compute's cycles (`results/h200-stall-sweep.json`); 132 blocks a CTA, 7 scopes
    # each: 64 KiB a warp
    "attention_fa3_d256": {**KERNELS["attention_fa3"], "shape": (1, 2, 8448, 256),
                           "full": (4, 8, 8448, 256), "buffer": SEGMENT * 4 * 3},
}
ALL = {**KERNELS, **PROBES}
# The scope that starts an iteration: a K/V block (attention) or a k-step (GEMM).
ITERATION = {"attention": "QK", "gemm": "MMA"}


# --- reading traces (plain Python) -------------------------------------------------------------
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


# --- on the GPU --------------------------------------------------------------------------------
def _mode(buffer: int, warps: str = SAMPLED_WARPS):
    """Proton's mode: a global buffer of `buffer` bytes a CTA, the listed warps sampled."""
    import triton.profiler as proton

    # global buffer: the kernels leave little shared memory; one warp per warpgroup sampled
    return proton.mode.Default(buffer_type="global", buffer_size=buffer,
                               sampling_strategy="selective", sampling_options=warps)


def _sampled(spec: dict) -> dict[int, str]:
    """The roles this kernel's sampled warps play (the in-line kernels have no producer)."""
    warps = {int(w) for w in spec.get("warps", SAMPLED_WARPS).split(",")}
    return {w: r for w, r in ROLES.items() if w in warps}


def _spec_mode(spec: dict):
    return _mode(spec["buffer"], ",".join(str(w) for w in _sampled(spec)))


def _runner(spec: dict, shape, profile: bool):
    """(launch(), check()) for one kernel at `shape`: launch() runs it once (scopes compiled in
    with `profile`), check() returns its relative error against torch."""
    import torch

    torch.manual_seed(0)
    if spec["workload"] == "attention":
        from kernels.attention import KERNELS as AK
        from kernels.attention import host as common

        B, H, S, D = shape
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty((B, H, S), device="cuda", dtype=torch.float32)
        cfg = common.config(spec["variant"], D, stages=spec.get("stages"))
        scale = common.default_scale(D)

        def launch():
            common.launch(AK[spec["variant"]], q, k, v, o, lse, cfg, False, scale, profile=profile,
                          fence=spec.get("fence", True))

        def check():
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
            return ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        return launch, check
    from kernels.gemm import KERNELS as GK
    from kernels.gemm import common as gcommon
    from kernels.gemm import config as gconfig

    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    cfg = gconfig(spec["variant"], stages=spec.get("stages"))

    def launch():
        gcommon.launch(GK[spec["variant"]], a, b, c, cfg, profile=profile)

    def check():
        ref = a.float() @ b.float()
        return ((c.float() - ref).norm() / ref.norm()).item()
    return launch, check


def _time_ms(fn) -> float:
    import triton

    return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")


def overhead(spec: dict, shape, rounds: int = 2) -> dict:
    """The scoped kernel against the plain one at `shape`, do_bench medians in `rounds` rounds of
    alternating order (the SM clock drifts down as the card heats: whoever runs first in a
    process gains up to ~12 %: `instruments/tools/order_probe.py`). The scoped kernel runs with
    Proton's device side on (its passes and buffer) but none of its launch hooks, so do_bench
    times the kernel alone."""
    from triton.profiler.hooks.instrumentation import InstrumentationHook

    plain, _ = _runner(spec, shape, False)
    scoped, _ = _runner(spec, shape, True)
    hook = InstrumentationHook(_spec_mode(spec))

    def time_scoped():
        hook.activate()
        try:
            return _time_ms(scoped)
        finally:
            hook.deactivate()

    t = {"plain": [], "scoped": []}
    for r in range(rounds):
        order = (("plain", lambda: _time_ms(plain)), ("scoped", time_scoped))
        for key, fn in order if r % 2 == 0 else order[::-1]:
            t[key].append(fn())
    med = {k: statistics.median(v) for k, v in t.items()}
    return {"shape": list(shape), "plain_ms": med["plain"], "scoped_ms": med["scoped"],
            "overhead": med["scoped"] / med["plain"] - 1, "rounds_ms": t}


def launch_tile(spec: dict) -> dict:
    """The launch's tile and ring depth, for the model to run the same kernel."""
    if spec["workload"] == "attention":
        from kernels.attention import config
        c = config(spec["variant"], spec["shape"][3], stages=spec.get("stages"))
        return {"BM": c.BM, "BN": c.BN, "consumers": c.consumers, "stages": c.stages}
    from kernels.gemm import config
    c = config(spec["variant"], stages=spec.get("stages"))
    return {"BM": c.BM, "BN": c.BN, "BK": c.BK, "stages": c.stages}


def record(name: str, out: Path, timing: bool = True, fence=True) -> dict:
    """Trace kernel `name` (its overlapped builds with the schedule fence `fence`: True, False or
    "hoisted", `kernels.attention.FENCES`) and write its trace and summary to `out`."""
    import torch
    import triton.profiler as proton

    spec = dict(ALL[name], fence=fence)
    raw = out / f"{name}_proton"
    t0 = time.time()
    launch, check = _runner(spec, spec["shape"], True)
    proton.start(str(raw), data="trace", backend="instrumentation", mode=_spec_mode(spec))
    launch()
    torch.cuda.synchronize()
    proton.finalize()
    err = check()
    path = next(out.glob(f"{raw.name}*"))           # Proton adds the suffix (.chrome_trace)
    trace = json.loads(path.read_text())
    t_trace = time.time() - t0
    n_events = len(trace["traceEvents"])
    try:
        trimmed = trim(trace, spec["workload"])
        (out / f"{name}.trace.json").write_text(json.dumps(trimmed, separators=(",", ":")))
        events = read_events(trace)
        summary = summarize(events, spec["workload"])
        if spec["workload"] == "gemm":
            summary["hand_off"] = hand_off_summary(events, launch_tile(spec)["stages"])
        del events
    except Exception:
        # keep a sample of what Proton wrote, to see why it could not be read
        (out / f"{name}.sample.json").write_text(json.dumps(trace["traceEvents"][:300]))
        raise
    finally:
        path.unlink()
    del trace
    # the same measures from the committed (trimmed) trace alone: what the CPU test re-derives
    summary["kept_ctas"] = {str(c): cta_stats(v["lanes"], spec["workload"])
                            for c, v in read_events(trimmed).items()}
    # Overhead: the same kernel with and without scopes, at the traced and the full shape.
    times = {}
    for label, shape in (("traced_shape", spec["shape"]), ("full_shape", spec["full"])) * timing:
        if label == "full_shape" and shape == spec["shape"]:
            times[label] = times["traced_shape"]
            continue
        try:
            times[label] = overhead(spec, shape)
        except Exception as e:  # noqa: BLE001 (the trace is worth keeping without the timing)
            times[label] = {"shape": list(shape), "error": f"{type(e).__name__}: {e}"}
    summary.update({
        "kernel": name, "workload": spec["workload"], "variant": spec["variant"],
        "traced_shape": list(spec["shape"]), "dtype": "float16", "causal": False,
        "tile": launch_tile(spec),
        "sampled_warps": {str(w): r for w, r in _sampled(spec).items()},
        "buffer_bytes_per_cta": spec["buffer"], "rel_error_vs_torch": err,
        "timing": times, "trace_events_total": n_events,
        "trace_events_kept": len(trimmed["traceEvents"]), "seconds": round(time.time() - t0, 1),
        "seconds_trace": round(t_trace, 1),
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "triton": __import__("triton").__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                          time.gmtime()),
    })
    add_clock(summary)
    (out / f"{name}.summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--only", nargs="*", choices=list(ALL), default=list(KERNELS))
    p.add_argument("--no-timing", action="store_true", help="traces only, no overhead timing")
    p.add_argument("--fence", default="True", choices=("True", "False", "hoisted"),
                   help="the overlapped kernels' schedule fence (hoisted: the wait for P·V written "
                        "right after the scores' wait, which the Proton records cannot move)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in args.only:
        try:
            s = record(name, args.out, timing=not args.no_timing,
                       fence={"True": True, "False": False}.get(args.fence, args.fence))
        except Exception as e:  # noqa: BLE001 (one kernel failing must not cost the others)
            failed += 1
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
            continue
        over = {k: f"{v['overhead']:+.1%}" if "overhead" in v else v.get("error")
                for k, v in s["timing"].items()} or "not timed"
        print(f"{name}: {s['ctas']} CTAs, period {s['period_clk']:.0f} clk, clock "
              f"{s['clock_ghz_from_stamps']} GHz, err {s['rel_error_vs_torch']:.1e}, overhead "
              f"{over}, {s['trace_events_total']} events, {s['seconds']} s", flush=True)
        if s.get("phases"):
            print("    phases (clk):", json.dumps({k: round(v) for k, v in s["phases"].items()}),
                  flush=True)
        for role, scopes in s["roles"].items():
            print("   ", role, {n: (round(v["busy"], 3), round(v["mean_clk"] or 0))
                                for n, v in scopes.items()}, flush=True)
        if "hand_off" in s:
            print("    hand-off (clk):", json.dumps(s["hand_off"]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
