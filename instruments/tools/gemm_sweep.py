"""The GEMM sweep taken apart: what the kernel does on the SM (cycles), at what clock,
and what the Python launch path adds on top — the three things `instruments.bench gemm`'s one
number per shape folds together.

    # 1. cycles: each default variant once per sweep shape, for Nsight Compute
    ncu --clock-control none --csv --page raw --log-file raw.csv \\
        -k 'regex:^(sequential|pipelined|ws|ws_pingpong)_kernel' --metrics ... \\
        python3 -m instruments.tools.gemm_sweep launch
    # 2. time on the device: do_bench (what the bench reports) beside CUPTI's kernel durations
    python3 -m instruments.tools.gemm_sweep device --out device.json
    # 3. together
    python3 -m instruments.tools.gemm_sweep parse raw.csv device.json --out h200-gemm-sweep.json

Cycles (`sm__cycles_elapsed.max`, the busiest SM) do not depend on the clock the power cap
sets, so they test the model's schedule alone; the kernel's time on the device (CUPTI's
start-to-end of the kernel, in the same do_bench loop of L2 flush + launch) over those cycles is
the clock it ran at under that loop; do_bench's median less the device time is what the host
adds (Triton's launcher builds three TMA descriptors per call).
`bash instruments/device/session.sh gemm_sweep` runs all three.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from .stall_probe import _raw_rows

SHAPES = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (6144,) * 3, (8192, 8192, 2048),
          (2048, 2048, 8192), (8000, 8008, 4104), (3000, 5000, 1336), (8192, 4096, 16384),
          (8192, 8192, 1024), (16384, 16384, 1024), (8192, 8192, 8192)]
VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong")     # each at its default config
NCU_METRICS = ("gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,"
               "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.avg.pct_of_peak_sustained_elapsed")
FLUSH_BYTES = 256 << 20     # do_bench's L2 flush buffer
TOL = 3e-3                  # fp16 in, fp32 accumulate (instruments.bench GEMM_TOL)


def _inputs(M, N, K, gen):
    import torch

    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=gen)
    return a, b, a.double() @ b.double()


def _checked(fn, out, ref) -> float:
    """Run ``fn`` once into a poisoned ``out`` and return its error against the float64 ``ref``."""
    import torch

    from instruments.harness import rel_error

    out.fill_(float("nan"))
    fn()
    torch.cuda.synchronize()
    return rel_error(out, ref)


def launch() -> int:
    """Each default variant once per shape, in SHAPES × VARIANTS order (what `parse` expects of
    ncu's rows), each checked against float64 after it ran."""
    import torch

    from kernels.gemm import gemm

    gen = torch.Generator(device="cuda").manual_seed(5)
    bad = 0
    for M, N, K in SHAPES:
        a, b, ref = _inputs(M, N, K, gen)
        out = torch.empty(M, N, device="cuda", dtype=torch.float16)
        for v in VARIANTS:
            err = _checked(lambda v=v, a=a, b=b, out=out: gemm(a, b, v, out=out), out, ref)
            bad += not err < TOL
            print(f"launch {M}x{N}x{K} {v} rel_err {err:.1e} {'ok' if err < TOL else 'BAD'}",
                  flush=True)
    return 1 if bad else 0


def kernel_durations(fn, n: int) -> list[float]:
    """CUPTI's durations (ms) of the kernels ``fn`` launches, over ``n`` rounds of do_bench's
    loop body (flush L2, then ``fn``): every kernel but the flush's fill."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cache = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            cache.zero_()
            fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        events = json.loads(Path(f.name).read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    return [e["dur"] / 1e3 for e in kernels if "elementwise" not in e["name"]
            and "fill" not in e["name"].lower()]


def device(rounds: int = 50) -> list[dict]:
    """Per shape: cuBLAS and each default variant, checked, then do_bench's median (as
    `instruments.bench` times it) and the median of CUPTI's device durations in the same kind of
    loop."""
    import torch
    import triton

    from kernels.gemm import config, gemm

    gen = torch.Generator(device="cuda").manual_seed(6)
    rows = []
    for M, N, K in SHAPES:
        a, b, ref = _inputs(M, N, K, gen)
        out = torch.empty(M, N, device="cuda", dtype=torch.float16)
        fns = {"cublas": lambda a=a, b=b, out=out: torch.matmul(a, b, out=out)}
        fns.update({v: (lambda v=v, a=a, b=b, out=out: gemm(a, b, v, out=out)) for v in VARIANTS})
        for name, fn in fns.items():
            err = _checked(fn, out, ref)
            row = {"M": M, "N": N, "K": K, "variant": name, "rel_err": err, "ok": err < TOL}
            if name != "cublas":
                cfg = config(name)
                row.update(stages=cfg.stages, persistent=cfg.persistent,
                           tile=[cfg.BM, cfg.BN, cfg.BK])
            if row["ok"]:
                bench_ms = triton.testing.do_bench(fn, warmup=25, rep=100)
                durs = kernel_durations(fn, rounds)
                dev_ms = statistics.median(durs)
                row.update(bench_ms=bench_ms, device_ms=dev_ms, kernels=len(durs),
                           host_ms=bench_ms - dev_ms,
                           device_tflops=2.0 * M * N * K / (dev_ms * 1e-3) / 1e12,
                           bench_tflops=2.0 * M * N * K / (bench_ms * 1e-3) / 1e12)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _mhz(clock: float) -> float:
    """ncu's `sm__cycles_elapsed.avg.per_second` in MHz: its CSV gives GHz or Hz, depending on the ncu version."""
    return clock * 1e3 if clock < 1e3 else clock / 1e6


def parse(raw: Path, device_rows: list[dict]) -> list[dict]:
    """ncu's raw page of `launch` + `device`'s rows -> one row per (shape, variant): cycles of
    the busiest SM, ncu's own clock, and with the device time the clock under do_bench's loop."""
    launches = _raw_rows(raw)
    want = len(SHAPES) * len(VARIANTS)
    if len(launches) != want:
        raise ValueError(f"{raw.name}: {len(launches)} launches, expected {want}")
    timed = {(r["M"], r["N"], r["K"], r["variant"]): r for r in device_rows}
    out = []
    for ((M, N, K), v), (kernel, m) in zip(((s, v) for s in SHAPES for v in VARIANTS), launches):
        if not kernel.startswith(v + "_kernel"):
            raise ValueError(f"launch {M}x{N}x{K} {v}: ncu profiled {kernel!r}")
        row = {"M": M, "N": N, "K": K, "variant": v, **m, "ncu_mhz": _mhz(m["clock_ghz"])}
        t = timed.get((M, N, K, v), {})
        for key in ("stages", "persistent", "tile", "bench_ms", "device_ms", "host_ms",
                    "device_tflops", "bench_tflops"):
            if key in t:
                row[key] = t[key]
        if t.get("device_ms"):
            row["clock_mhz_in_loop"] = m["cycles_max"] / (t["device_ms"] * 1e-3) / 1e6
        out.append(row)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("launch", help="one launch per shape and variant, for ncu")
    d = sub.add_parser("device", help="do_bench beside CUPTI's device time")
    d.add_argument("--out", type=Path)
    d.add_argument("--rounds", type=int, default=50)
    q = sub.add_parser("parse", help="ncu's raw CSV + the device JSON -> the committed JSON")
    q.add_argument("raw", type=Path)
    q.add_argument("device", type=Path)
    q.add_argument("--out", type=Path)
    q.add_argument("--log", default=None, help="where the run's logs are committed")
    a = p.parse_args(argv)
    if a.what == "launch":
        return launch()
    if a.what == "device":
        rows = device(a.rounds)
        if a.out:
            a.out.write_text(json.dumps(rows, indent=1) + "\n")
        return 0 if all(r["ok"] for r in rows) else 1
    rows = parse(a.raw, json.loads(a.device.read_text()) if a.device.exists() else [])
    if a.out:
        a.out.write_text(json.dumps({
            "what": "GEMM sweep: Nsight Compute cycles (--clock-control none, one launch each), "
                    "do_bench and CUPTI device time (instruments/tools/gemm_sweep.py)",
            "log": a.log, "rows": rows}, indent=1) + "\n")
    print(f"{'shape':18s} {'variant':12s} {'cycles':>9s} {'ncu MHz':>7s} {'device us':>9s} "
          f"{'bench us':>8s} {'MHz in loop':>11s}")
    for r in rows:
        dev = f"{r['device_ms'] * 1e3:9.1f}" if "device_ms" in r else f"{'':9s}"
        ben = f"{r['bench_ms'] * 1e3:8.1f}" if "bench_ms" in r else f"{'':8s}"
        clk = f"{r['clock_mhz_in_loop']:11.0f}" if "clock_mhz_in_loop" in r else ""
        print(f"{r['M']}x{r['N']}x{r['K']:<8d} {r['variant']:12s} {r['cycles_max']:9.0f} "
              f"{r['ncu_mhz']:7.0f} {dev} {ben} {clk}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
