"""All microbenchmarks in one call: rows (one per raw measurement) and the model constants
derived from them. ``python -m instruments.bench micro`` calls ``bench_micro``; the GPU tests call
the per-benchmark ``run`` functions with shorter loops."""
from __future__ import annotations

import json
import math
import statistics

from . import common, mbar, tma, units, wgmma
from .clock import clock_under_load, iters_for

NS = (64, 128, 256)


def _fit_intercept(points: list[tuple[float, float]]) -> float | None:
    if len({x for x, _ in points}) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - slope * mx


CONSTANTS = ("clock_hz_under_load", "tensor_flop_per_clk", "wgmma_latency_clk",
             "sfu_exp_per_clk", "fma_lanes_per_clk", "tma_latency_clk",
             "l2_bytes_per_clk_per_sm", "mbarrier_clk")


def derive_constants(rows: list[dict]) -> dict:
    """The model's constants (the keys sim/hardware.py's MEASURED_FIELDS reads) from the ok rows.
    A constant with no ok row (or a non-finite fit) is left out, not set to null: sim then keeps
    its datasheet value for it, and the table says "not measured"."""
    ok = [r for r in rows if r.get("ok")]

    def pick(bench, **kw):
        return [r for r in ok if r["bench"] == bench and all(r.get(k) == v for k, v in kw.items())]

    c = dict.fromkeys(CONSTANTS)
    clk = pick("clock")
    if clk:
        c["clock_hz_under_load"] = float(clk[0]["clock_hz_globaltimer"])
    wg = pick("wgmma", dtype="float16", warpgroups=2, wait=1)
    if wg:
        # The fit's intercept (the queued per-instruction overhead) is kept in the rows, not
        # handed to the model: on the H200 it came out 0.0 clk (2026-12-02), so the model's
        # fitted wgmma_overhead_clk stands for losses that are not in a bare wgmma stream.
        c["tensor_flop_per_clk"] = float(wgmma.fit_overhead(wg)[0])
    lone = pick("wgmma", dtype="float16", warpgroups=1, wait=0)
    if lone:  # issue -> accumulators readable, beyond the N/2 clk of math
        c["wgmma_latency_clk"] = float(statistics.median(r["clk_per_instr"] - r["N"] / 2 for r in lone))
    for key, bench in (("sfu_exp_per_clk", "exp2"), ("fma_lanes_per_clk", "fma")):
        rs = pick(bench)
        if rs:
            c[key] = float(max(r["per_clk_per_sm"] for r in rs))
    lat = pick("tma_latency", mode="l2")
    if lat:
        icpt = _fit_intercept([(r["box_bytes"], r["latency_clk_median"]) for r in lat])
        smallest = min(lat, key=lambda r: r["box_bytes"])["latency_clk_median"]
        c["tma_latency_clk"] = float(icpt if icpt is not None and icpt > 0 else smallest)
    bw = pick("tma_bandwidth", mode="l2")
    if bw:
        c["l2_bytes_per_clk_per_sm"] = float(max(r["bytes_per_clk_per_sm"] for r in bw))
    mb = pick("mbarrier", ping="warp")
    if mb:
        c["mbarrier_clk"] = float(mb[0]["clk_per_handoff"])
    return {k: v for k, v in c.items() if v is not None and math.isfinite(v) and v > 0}


def bench_micro(seed: int = 0, quick: bool = False) -> tuple[list[dict], dict]:
    """Every microbenchmark once (``quick``: shorter loops, fewer configurations)."""
    import torch

    gen = torch.Generator(device=common.DEVICE)
    gen.manual_seed(seed)
    sec = 0.005 if quick else 0.02
    rows: list[dict] = []

    def add(fn, *a, **kw):
        try:
            row = fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 -- record it, keep measuring the rest
            row = {"bench": getattr(fn, "__module__", "?").rsplit(".", 1)[-1] + "." + fn.__name__,
                   "args": repr(a[:3]) + repr(kw), "ok": False,
                   "error": f"{type(e).__name__}: {e}"[:400]}
        rows.append(row)
        print(json.dumps(row), flush=True)
        return row

    # 1. wgmma
    dtypes = (torch.float16,) if quick else (torch.float16, torch.bfloat16)
    for dt in dtypes:
        for wgs in (1, 2):
            for N in NS:
                iters = iters_for(sec, 8 * wgs * (N / 2 + 40))
                add(wgmma.run, N, wgs, 1, dt, iters, gen)
    for N in NS:  # each instruction's whole latency: issue, wait 0
        add(wgmma.run, N, 1, 0, torch.float16, iters_for(sec, 8 * (N + 100)), gen)
    # 2-3. SFU exp2, FP32 FMA
    add(units.run, "exp2", iters_for(sec, 16 * 8 * 256 / 16), gen)
    add(units.run, "fma", iters_for(sec, 16 * 8 * 256 / 128), gen)
    # 4. TMA latency (one copy at a time), then bandwidth with 1..4 in flight on every SM
    for mode in ("l2", "hbm"):
        for BR in ((8, 64, 128, 256) if mode == "l2" else (64, 256)):
            add(tma.run_latency, BR, mode, gen, 256 if quick else 512)
    for mode in ("l2", "hbm"):
        for depth in (1, 2, 3, 4):
            add(tma.run_bandwidth, 128, depth, mode, gen, 1000 if quick else 4000)
    # 5. mbarrier
    for wg in (False, True):  # ping from a warp (the constant), then from a warpgroup
        add(mbar.run, 20_000 if quick else 200_000, ping_warpgroup=wg)
    # 6. SM clock under tensor load
    wg_row = next((r for r in rows if r.get("bench") == "wgmma" and r.get("N") == 256
                   and r.get("warpgroups") == 2 and r.get("ok")), None)
    add(clock_under_load, gen, wg_row, 0.3 if quick else 2.0)
    return rows, derive_constants(rows)


def print_table(rows: list[dict], constants: dict) -> None:
    print("\nmicrobenchmarks (per SM; ! = failed check or error)")
    for r in rows:
        b = r.get("bench", "?")
        flag = " " if r.get("ok") else "!"
        if "error" in r:
            print(f" ! {b:<14} {r['error'][:90]}")
        elif b == "wgmma":
            v = r.get("flop_per_clk_per_sm")
            extra = (f"{v:7.0f} FLOP/clk  {r['clk_per_instr']:6.1f} clk/instr  "
                     f"+{r['overhead_beyond_half_n']:5.1f}") if v else f"rel_err {r['rel_err']:.1e}"
            dt = {"float16": "fp16", "bfloat16": "bf16"}.get(r["dtype"], r["dtype"])
            print(f" {flag} wgmma {dt} n{r['N']:<3} {r['warpgroups']}wg w{r['wait']}  {extra}")
        elif b in ("exp2", "fma"):
            v = r.get("per_clk_per_sm")
            print(f" {flag} {b:<22} " + (f"{v:7.1f} /clk" if v else f"rel_err {r['rel_err']:.1e}"))
        elif b == "tma_latency":
            print(f" {flag} tma latency {r['mode']:<3} {r['box_bytes']:>6} B  "
                  f"{r['latency_clk_median']:6.0f} clk (min {r['latency_clk_min']:.0f})")
        elif b == "tma_bandwidth":
            print(f" {flag} tma bw {r['mode']:<3} depth {r['depth']}       "
                  f"{r['bytes_per_clk_per_sm']:6.1f} B/clk  ({r['tb_per_s_total']:.2f} TB/s total)")
        elif b == "mbarrier":
            print(f" {flag} mbarrier hand-off {r['ping']:<9}{r['clk_per_handoff']:6.1f} clk")
        elif b == "clock":
            smi = r.get("clock_hz_smi_median")
            print(f" {flag} clock under load       {r['clock_hz_globaltimer'] / 1e6:6.0f} MHz "
                  f"(events {r['clock_hz_events'] / 1e6:.0f}, smi "
                  + (f"{smi / 1e6:.0f})" if smi else "-)"))
        else:
            print(f" {flag} {b}")
    print("\nmodel constants (sim/hardware.py names)")
    for k in CONSTANTS:
        v = constants.get(k)
        print(f"   {k:<26} " + ("not measured (sim keeps its datasheet value)" if v is None
                                else f"{v:.4g}"))
