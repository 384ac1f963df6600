"""Benchmark harness: ``python -m instruments.bench gemm|gemm_probe|gemm_shapes|micro [--quick]
[--out DIR]`` (``gemm_shapes [--explore]``: ``variant="auto"`` beside cuBLAS at 8192³,
6144³, 4096³, 8192×8192×2048 and 16384×4096×4096, fp16 and bf16).

Every kernel and its vendor peer are timed **in the same run** with ``triton.testing.do_bench``
medians (warm-up first; fresh random inputs, never zeros), after a correctness check against a
float64 reference with a poisoned output buffer. Results go to ``results/<gpu>.json``
(and ``$OUT`` if set): GPU name, clocks read from nvidia-smi, torch/triton/CUDA versions, date,
the raw numbers. The last thing printed is a short table.

Generic parts for later subcommands (``attention``): ``environment()``, ``measure()``,
``interleaved()``, ``ClockLog``, ``rel_error()``, ``write_results()``; a subcommand returns a
list of row dicts.

Why interleaved rounds and a clock log: this H200 boosts to 1980 MHz when cool and settles at
1.3-1.8 GHz under sustained tensor load (a 700 W power cap; `clocks_after` in `results/h200*.json`).
Timed one after another, the first kernel of a run gets the boost: in one process fa3 gives
~670 TFLOP/s first and ~590 twice later (``instruments/tools/order_probe.py``). So every
kernel of a comparison is timed in several rounds, in a rotated order, the median over rounds
is reported, and each row carries the SM clock nvidia-smi saw during its own measurements
(``sm_mhz``). Under the power
cap nvidia-smi reads high (the Proton traces' cycle counts imply ~1.3 GHz for the GEMMs while it
logs 1.5; `fidelity/README.md`), so ``sm_mhz`` is an upper bound on the clock a kernel ran at.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Self

from . import RESULTS as RESULTS_DIR


# ------------------------------------------------------------------------------------ generic
def _smi(query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def environment() -> dict:
    """What ran: GPU, clocks (as found; never changed), library versions, date."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "gpu": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "capability": list(torch.cuda.get_device_capability(0)),
        "clocks_now": _smi("clocks.sm,clocks.mem"),
        "clocks_max": _smi("clocks.max.sm,clocks.max.mem"),
        "power_limit": _smi("power.limit"),
        "driver": _smi("driver_version"),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
    }


def measure(fn, flops: float, *, warmup_ms: int = 25, rep_ms: int = 100) -> dict:
    """Median time of ``fn()`` by ``triton.testing.do_bench`` (CUDA events, L2 flushed between
    calls) and the rate ``flops / time``. Also the 20th/80th percentiles as the spread. (For
    the small sizes, where the launch path dominates, ``gemm_probe`` also times CUDA-graph
    replays, `do_bench_cudagraph`.)"""
    import triton

    q = [0.5, 0.2, 0.8]
    ms, lo, hi = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=q)
    return {"ms": ms, "ms_p20": lo, "ms_p80": hi, "tflops": flops / (ms * 1e-3) / 1e12}


class ClockLog:
    """``nvidia-smi`` sampling the SM clock and board power every ``period_ms`` in the
    background, each sample stamped on arrival, so a measurement can ask what the clock was
    during its own window. Without nvidia-smi the log stays empty and windows report None."""

    def __init__(self, period_ms: int = 50):
        self.period_ms, self.samples, self.proc = period_ms, [], None

    def __enter__(self) -> Self:
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                 f"--loop-ms={self.period_ms}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)
        except OSError:
            return self
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:  # a header or "[N/A]": not a sample
                continue
            self.samples.append((time.monotonic(), mhz, watts))

    def window(self, t0: float, t1: float) -> dict:
        inside = [(m, w) for t, m, w in self.samples if t0 <= t <= t1]
        if not inside:
            return {"sm_mhz": None, "power_w": None, "clock_samples": 0}
        return {"sm_mhz": statistics.median(m for m, _ in inside),
                "power_w": statistics.median(w for _, w in inside), "clock_samples": len(inside)}

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def interleaved(fns: dict, flops: dict, rounds: int = 5, clock_log: ClockLog | None = None,
                **measure_kw) -> dict[str, dict]:
    """Time every ``fns[name]`` ``rounds`` times, the order rotated each round so that no
    kernel always runs first (cool, boosted) or last (hot). Per name: the median over rounds of
    the per-round medians (``ms``, ``tflops``), the spread over rounds, and the median SM clock
    and power seen during its windows (``sm_mhz``, ``power_w``; None without nvidia-smi)."""
    names = list(fns)
    per = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names) if names else 0
        for n in names[k:] + names[:k]:
            t0 = time.monotonic()
            m = measure(fns[n], flops[n], **measure_kw)
            m.update(clock_log.window(t0, time.monotonic()) if clock_log else {})
            per[n].append(m)
    out = {}
    for n, ms in per.items():
        t = statistics.median(x["ms"] for x in ms)
        clocks = [x["sm_mhz"] for x in ms if x.get("sm_mhz")]
        watts = [x["power_w"] for x in ms if x.get("power_w")]
        out[n] = {"ms": t, "tflops": flops[n] / (t * 1e-3) / 1e12, "rounds": rounds,
                  "ms_rounds": [round(x["ms"], 5) for x in ms],
                  "tflops_min": min(flops[n] / (x["ms"] * 1e-3) / 1e12 for x in ms),
                  "tflops_max": max(flops[n] / (x["ms"] * 1e-3) / 1e12 for x in ms),
                  "ms_p20": statistics.median(x["ms_p20"] for x in ms),
                  "ms_p80": statistics.median(x["ms_p80"] for x in ms),
                  "sm_mhz": statistics.median(clocks) if clocks else None,
                  "power_w": statistics.median(watts) if watts else None}
    return out


def rel_error(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64; NaN (e.g. an unwritten poisoned element) gives inf."""
    import torch

    d = out.double() - ref
    err = (torch.linalg.vector_norm(d) / torch.linalg.vector_norm(ref)).item()
    return float("inf") if math.isnan(err) else err


def gpu_slug(name: str) -> str:
    for key in ("H200", "H100", "H800", "H20", "GH200"):
        if key in name:
            return key.lower()
    return "".join(ch.lower() if ch.isalnum() else "-" for ch in name).strip("-")


def write_results(subcommand: str, env: dict, rows: list[dict], extra: dict | None = None,
                  out_dirs: list[Path] | None = None) -> list[Path]:
    """Merge ``{subcommand: {...}}`` into ``<dir>/<gpu>.json`` for each out dir."""
    out_dirs = out_dirs or [RESULTS_DIR]
    written = []
    for d in out_dirs:
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[subcommand] = {"environment": env, "rows": rows, **(extra or {})}
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


# ------------------------------------------------------------------------------------ gemm
GEMM_TOL = {"float16": 3e-3, "bfloat16": 1.5e-2}
PINGPONG_128 = (128, 128, 64)  # the square pingpong tile, for comparison: 64 FLOP per operand byte


def gemm_configs(quick: bool) -> list[tuple]:
    """(variant, stages, persistent[, tile]) to time at the headline size; None = default."""
    if quick:
        return [("sequential", None, None), ("pipelined", None, None), ("ws", None, None),
                ("ws_pingpong", None, None)]
    return [("sequential", 1, None),
            ("pipelined", 2, None), ("pipelined", 3, None), ("pipelined", 4, None),
            ("ws", 2, True), ("ws", 3, True), ("ws", 3, False),
            ("ws_pingpong", 2, True), ("ws_pingpong", 3, True), ("ws_pingpong", 4, True),
            ("ws_pingpong", 4, False),
            ("ws", 3, True, (256, 128, 64)), ("ws_pingpong", 4, True, PINGPONG_128)]


def gemm_rows(M, N, K, dtype, configs, gen, rounds: int = 5,
              clock_log: ClockLog | None = None) -> list[dict]:
    """Check, then time (``interleaved`` rounds) cuBLAS and each (variant, stages,
    persistent[, tile]) on one fresh pair of random inputs."""
    import torch

    from kernels.gemm import auto as gemm_auto
    from kernels.gemm import config as gemm_config
    from kernels.gemm import gemm

    torch.cuda.empty_cache()  # the previous size's buffers are gone
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
    ref = a.double() @ b.double()
    flops = 2.0 * M * N * K
    dname = str(dtype).removeprefix("torch.")
    out = torch.empty(M, N, device="cuda", dtype=dtype)
    rows, fns = [], {}
    for i, entry in enumerate([("cublas", None, None)] + list(configs)):
        variant, stages, persistent = entry[:3]
        tile = entry[3] if len(entry) > 3 else None
        group = entry[4] if len(entry) > 4 else None
        row = {"M": M, "N": N, "K": K, "dtype": dname, "variant": variant}
        if variant == "cublas":
            fn = lambda: torch.matmul(a, b, out=out)
        elif variant == "auto":
            pick = gemm_auto.choose(M, N, K, dtype)
            cfg = gemm_config(pick.variant, pick.stages, None, pick.tile, pick.group_m)
            row.update(stages=cfg.stages, persistent=cfg.persistent, tile=[cfg.BM, cfg.BN, cfg.BK],
                       group_m=cfg.group_m, picked=pick.variant, why=pick.why)
            fn = lambda: gemm(a, b, "auto", out=out)
        else:
            cfg = gemm_config(variant, stages, persistent, tile, group)
            row.update(stages=cfg.stages, persistent=cfg.persistent, tile=[cfg.BM, cfg.BN, cfg.BK],
                       tile_override=tile is not None, group_m=cfg.group_m)
            fn = lambda v=variant, s=stages, p=persistent, t=tile, g=group: gemm(
                a, b, v, s, p, out=out, tile=t, group_m=g)
        out.fill_(float("nan"))  # poison: an unwritten element fails the check
        fn()
        torch.cuda.synchronize()
        row["rel_err"] = rel_error(out, ref)
        row["ok"] = row["rel_err"] < GEMM_TOL[dname]
        if row["ok"]:
            fns[i] = fn
        rows.append(row)
    timed = interleaved(fns, dict.fromkeys(fns, flops), rounds, clock_log)
    for i, row in enumerate(rows):
        if i in timed:
            row.update(timed[i])
        print(json.dumps(row), flush=True)
    return rows


def bench_gemm(args) -> tuple[list[dict], dict]:
    import torch

    headline = (8192, 8192, 8192)
    sweep = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (6144,) * 3,
             (8192, 8192, 2048), (2048, 2048, 8192), (8000, 8008, 4104), (3000, 5000, 1336),
             (8192, 4096, 16384), (8192, 8192, 1024), (16384, 16384, 1024)]
    if args.quick:
        sweep = [(1024,) * 3, (8000, 8008, 4104)]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        rows += gemm_rows(*headline, dtype, gemm_configs(args.quick), gen, rounds=5,
                          clock_log=args.clock_log)
    defaults = [(v, None, None) for v in ("sequential", "pipelined", "ws", "ws_pingpong")]
    for M, N, K in sweep:
        rows += gemm_rows(M, N, K, torch.float16, defaults, gen, rounds=3, clock_log=args.clock_log)
    return rows, {"headline": list(headline), "tolerance": GEMM_TOL, "rounds": "5 headline, 3 sweep"}


def bench_gemm_probe(args) -> tuple[list[dict], dict]:
    """Which pingpong tile: the 192 x 128 tile (three row
    blocks of 64) against the 128 x 128 one and against ``ws``, at the headline size and at the
    small K where the hidden epilogue is worth most, every row beside cuBLAS."""
    import torch

    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed + 2)
    headline = [("ws", 3, True), ("ws_pingpong", 4, True), ("ws_pingpong", 3, True),
                ("ws_pingpong", 4, True, PINGPONG_128)]
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        rows += gemm_rows(8192, 8192, 8192, dtype, headline, gen, rounds=5,
                          clock_log=args.clock_log)
    for M, N, K in ((8192, 8192, 1024), (8192, 8192, 2048), (16384, 16384, 1024),
                    (8000, 8008, 4104)):
        rows += gemm_rows(M, N, K, torch.float16, headline, gen, rounds=3,
                          clock_log=args.clock_log)
    return rows, {"tolerance": GEMM_TOL}


# Issue 23's shapes: variant="auto" beside cuBLAS, fp16 and bf16
AUTO_SHAPES = [(8192, 8192, 8192), (6144, 6144, 6144), (4096, 4096, 4096), (8192, 8192, 2048),
               (16384, 4096, 4096)]


def auto_explore_configs() -> list[tuple]:
    """The candidates the auto rule chooses among, at the L2 groups it could pick, and the
    nearest others (pipelined; pingpong with a 128-deep k-step; ws's tile turned)."""
    out = []
    for g in (8, 16, 32):
        out += [("ws", 3, True, None, g), ("ws_pingpong", 4, True, None, g)]
    out += [("pipelined", 3, None, None, 16), ("ws_pingpong", 2, True, (192, 128, 128), 16),
            ("ws", 3, True, (256, 128, 64), 16)]
    return out


def bench_gemm_shapes(args) -> tuple[list[dict], dict]:
    """``variant="auto"`` beside cuBLAS (and, with ``--explore``, beside the configurations it
    chooses among) at 8192³, 6144³, 4096³, 8192×8192×2048 and 16384×4096×4096, fp16 and bf16,
    in interleaved rounds."""
    import torch

    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed + 3)
    rounds = args.rounds or 5
    configs = [("auto", None, None)]
    if args.explore:
        configs += auto_explore_configs()
    else:
        configs += [("ws", 3, True), ("ws_pingpong", 4, True)]
    rows = []
    dtypes = (torch.float16,) if args.fp16_only else (torch.float16, torch.bfloat16)
    for dtype in dtypes:
        for M, N, K in AUTO_SHAPES:
            rows += gemm_rows(M, N, K, dtype, configs, gen, rounds=rounds, clock_log=args.clock_log)
    return rows, {"tolerance": GEMM_TOL, "rounds": rounds, "shapes": AUTO_SHAPES,
                  "explore": bool(args.explore)}


def print_gemm_table(rows: list[dict]) -> None:
    sizes = []
    for r in rows:
        key = (r["M"], r["N"], r["K"], r["dtype"])
        if key not in sizes:
            sizes.append(key)
    print("\nGEMM TFLOP/s (median over interleaved rounds of do_bench medians [round min-max]; "
          "x = fraction of cuBLAS in the same run; SM clock during it; ! = failed check)")
    for key in sizes:
        rs = [r for r in rows if (r["M"], r["N"], r["K"], r["dtype"]) == key]
        cub = next((r.get("tflops") for r in rs if r["variant"] == "cublas"), None)
        print(f"{key[0]}x{key[1]}x{key[2]} {key[3]}")
        for r in rs:
            name = r["variant"]
            if "stages" in r:
                name += f" s{r['stages']}" + ("" if r["variant"] in ("sequential", "pipelined")
                                              else (" pers" if r["persistent"] else " grid=tiles"))
                if r.get("tile_override") or r["variant"] == "auto":
                    name += " " + "x".join(map(str, r["tile"]))
                if r.get("group_m", 8) != 8:
                    name += f" g{r['group_m']}"
                if r["variant"] == "auto":
                    name = f"auto={r['picked']} s{r['stages']} " + name.split(" ", 3)[-1]
            if not r["ok"]:
                print(f"  {name:<28} !  rel_err {r['rel_err']:.2e}")
                continue
            frac = f"{r['tflops'] / cub:5.2f}x" if cub else ""
            spread = f"[{r['tflops_min']:.0f}-{r['tflops_max']:.0f}]" if "tflops_min" in r else ""
            mhz = f" {r['sm_mhz']:.0f} MHz" if r.get("sm_mhz") else ""
            print(f"  {name:<28} {r['tflops']:7.1f} {spread:>11} {frac}{mhz}  (rel_err {r['rel_err']:.1e})")


# ------------------------------------------------------------------------------------ micro
def write_micro(env: dict, rows: list[dict], constants: dict,
                out_dirs: list[Path] | None = None) -> list[Path]:
    """``<dir>/<gpu>-micro.json``: {"micro": {"environment", "constants", "rows"}} (sim reads it)."""
    written = []
    for d in out_dirs or [RESULTS_DIR]:
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}-micro.json"
        data = {"micro": {"environment": env, "constants": constants, "rows": rows}}
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


def main_micro(args, env: dict) -> int:
    """The microbenchmarks of instruments/micro (see its README): rows + the model's constants."""
    from instruments.micro.run import bench_micro, print_table

    rows, constants = bench_micro(seed=args.seed, quick=args.quick)
    env["clocks_after"] = _smi("clocks.sm,clocks.mem")
    outs = args.out or [RESULTS_DIR] + ([Path(os.environ["OUT"])] if os.environ.get("OUT") else [])
    for path in write_micro(env, rows, constants, outs):
        print(f"wrote {path}")
    print_table(rows, constants)
    return 0 if all(r.get("ok") for r in rows) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instruments.bench")
    p.add_argument("what", choices=["gemm", "gemm_probe", "gemm_shapes", "micro"],
                   help="which kernels to benchmark")
    p.add_argument("--quick", action="store_true", help="a few sizes and default configs only")
    p.add_argument("--explore", action="store_true",
                   help="gemm_shapes: also every configuration auto chooses among")
    p.add_argument("--fp16-only", action="store_true", help="gemm_shapes: fp16 only")
    p.add_argument("--rounds", type=int, default=None, help="gemm_shapes: interleaved rounds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, action="append", default=None,
                   help="directory for <gpu>.json (repeatable; default results and $OUT)")
    args = p.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure", file=sys.stderr)
        return 2
    env = environment()
    print(json.dumps(env), flush=True)
    if args.what == "micro":
        return main_micro(args, env)
    with ClockLog() as args.clock_log:
        rows, extra = {"gemm": bench_gemm, "gemm_probe": bench_gemm_probe,
                       "gemm_shapes": bench_gemm_shapes}[args.what](args)
    env["clocks_after"] = _smi("clocks.sm,clocks.mem")
    outs = args.out or [RESULTS_DIR] + ([Path(os.environ["OUT"])] if os.environ.get("OUT") else [])
    for path in write_results(args.what, env, rows, extra, outs):
        print(f"wrote {path}")
    print_gemm_table(rows)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
