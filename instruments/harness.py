"""The benchmark harness every bench shares: what ran (``environment``), one timing
(``measure``), the SM clock and board power logged beside it (``ClockLog``), kernels timed in
interleaved rounds (``interleaved``), each checked before it is timed (``check_then_time``), its
energy (``tflop_per_j``, ``per_joule``) and where results go (``out_dirs``, ``write_results``).

Every kernel and its vendor peer are timed **in the same run** with ``triton.testing.do_bench``
medians (warm-up first; fresh random inputs, never zeros), after a correctness check against a
float64 reference with a poisoned output buffer.

Why interleaved rounds and a clock log: this H200 boosts to 1980 MHz when cool and settles at
1.3-1.8 GHz under sustained tensor load (a 700 W power cap; `clocks_after` in `results/h200*.json`).
Timed one after another, the first kernel of a run gets the boost: in one process fa3 gives
~670 TFLOP/s first and ~590 twice later (``instruments/tools/order_probe.py``). So every
kernel of a comparison is timed in several rounds, in a rotated order, the median over rounds
is reported, and each row carries the SM clock and board power nvidia-smi saw during its own
measurements (``sm_mhz``, ``power_w``). Under the power cap nvidia-smi reads high (the Proton
traces' cycle counts imply ~1.3 GHz for the GEMMs while it logs 1.5; `fidelity/README.md`), so
``sm_mhz`` is an upper bound on the clock a kernel ran at.

Energy: at the cap the clock a kernel holds is set by the power its work draws, so two kernels
that do the same FLOPs are also compared per joule: ``tflop_per_j`` = TFLOP/s over the board's
watts during the kernel's own windows (board power: the whole card, memory included).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from records import RESULTS


def smi(query: str) -> str | None:
    """One line of ``nvidia-smi --query-gpu=QUERY`` (None without nvidia-smi)."""
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
        "clocks_now": smi("clocks.sm,clocks.mem"),
        "clocks_max": smi("clocks.max.sm,clocks.max.mem"),
        "power_limit": smi("power.limit"),
        "driver": smi("driver_version"),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
    }


def gpu_environment() -> dict | None:
    """`environment()` for a run on this machine's CUDA GPU, printed as the run's first line;
    None, and a line on stderr, where there is no GPU to measure."""
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure", file=sys.stderr)
        return None
    env = environment()
    print(json.dumps(env), flush=True)
    return env


def measure(fn, flops: float, *, warmup_ms: int = 25, rep_ms: int = 100,
            graph: bool = False) -> dict:
    """Median time of ``fn()`` by ``triton.testing.do_bench`` (CUDA events, L2 flushed between
    calls) and the rate ``flops / time``. Also the 20th/80th percentiles as the spread.
    ``graph``: replays of ``fn`` captured in a CUDA graph (``do_bench_cudagraph``): no host path
    in the timed window and no L2 flush between calls (``host_us`` says when that matters)."""
    import triton

    q = [0.5, 0.2, 0.8]
    if graph:
        ms, lo, hi = triton.testing.do_bench_cudagraph(fn, rep=rep_ms, quantiles=q)
    else:
        ms, lo, hi = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=q)
    return {"ms": ms, "ms_p20": lo, "ms_p80": hi, "tflops": flops / (ms * 1e-3) / 1e12}


def host_us(fn, calls: int = 50) -> float:
    """Microseconds the host spends in one ``fn()``: ``calls`` calls back to back with no
    synchronisation between them (the host only enqueues), then one wait for the GPU outside the
    timed part. do_bench flushes L2 with a kernel before each call and times from an event
    recorded after it: a host path longer than that flush leaves the GPU idle inside the timed
    window, so a short launch's time then includes part of its host path."""
    fn()
    _sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    _sync()
    return (t1 - t0) / calls * 1e6


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


class ClockLog:
    """``nvidia-smi`` sampling the SM clock and board power every ``period_ms`` in the
    background, each sample stamped on arrival, so a measurement can ask what the clock and the
    power were during its own window. Power is ``power.draw.instant`` where the driver has it
    (``power.draw`` is averaged over about a second: longer than one kernel's window), else
    ``power.draw`` (``power_field`` says which). Without nvidia-smi the log stays empty and
    windows report None."""

    def __init__(self, period_ms: int = 50):
        self.period_ms, self.samples, self.proc = period_ms, [], None
        self.power_field: str | None = None

    def __enter__(self) -> Self:
        self.power_field = ("power.draw.instant" if smi("power.draw.instant") is not None
                            else "power.draw")
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu=clocks.sm,{self.power_field}",
                 "--format=csv,noheader,nounits", f"--loop-ms={self.period_ms}"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.power_field = None
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
    the per-round medians (``ms``, ``tflops``), the spread over rounds, the median SM clock and
    board power seen during its windows (``sm_mhz``, ``power_w``; None without nvidia-smi), the
    samples they rest on (``clock_samples``), TFLOP per joule (``tflop_per_j``) and the host's
    time per call (``host_us``)."""
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
        tflops = flops[n] / (t * 1e-3) / 1e12
        power = statistics.median(watts) if watts else None
        out[n] = {"ms": t, "tflops": tflops, "rounds": rounds,
                  "ms_rounds": [round(x["ms"], 5) for x in ms],
                  "tflops_min": min(flops[n] / (x["ms"] * 1e-3) / 1e12 for x in ms),
                  "tflops_max": max(flops[n] / (x["ms"] * 1e-3) / 1e12 for x in ms),
                  "ms_p20": statistics.median(x["ms_p20"] for x in ms),
                  "ms_p80": statistics.median(x["ms_p80"] for x in ms),
                  "sm_mhz": statistics.median(clocks) if clocks else None,
                  "power_w": power, "tflop_per_j": tflop_per_j(tflops, power),
                  "clock_samples": sum(x.get("clock_samples", 0) for x in ms),
                  "host_us": host_us(fns[n])}
    return out


def attention_reference(q, k, v, causal: bool, scale: float):
    """(O, LSE) in float64 for (batch, heads, seq, d) inputs: softmax(Q·Kᵀ·scale, keys right of
    the diagonal masked when causal) · V, and each row's natural-log logsumexp."""
    import torch

    qd, kd, vd = q.double(), k.double(), v.double()
    s = (qd @ kd.transpose(-1, -2)) * scale
    if causal:
        S = q.shape[2]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1),
                          float("-inf"))
    return torch.softmax(s, dim=-1) @ vd, torch.logsumexp(s, dim=-1)


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
    out_dirs = out_dirs or [RESULTS]
    written = []
    for d in out_dirs:
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[subcommand] = {"environment": env, "rows": rows, **(extra or {})}
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


def tflop_per_j(tflops: float | None, watts: float | None) -> float | None:
    """TFLOP per joule: TFLOP/s over watts (None without a power reading)."""
    return tflops / watts if tflops and watts else None


def per_joule(row: dict, peer: dict | None, peer_name: str) -> str:
    """"1.23 TFLOP/J (0.97x cuDNN's 1.27)": a row's energy beside its peer's, for the tables."""
    mine = row.get("tflop_per_j")
    if mine is None:
        return ""
    theirs = (peer or {}).get("tflop_per_j")
    beside = (f" ({mine / theirs:4.2f}x {peer_name}'s {theirs:.2f})"
              if theirs and peer is not row else "")
    return f"{mine:.2f} TFLOP/J{beside}"


def check_then_time(cands: dict[str, tuple[Callable, dict]], check: Callable[[Callable], float],
                    tol: float, flops: float, base: dict, rounds: int = 5,
                    clock_log: ClockLog | None = None, graph: bool = False) -> list[dict]:
    """Check each candidate, then time those that pass together in ``interleaved`` rounds.

    ``cands``: {key: (fn, fields)}; ``fn()`` runs the kernel once, ``fields`` go into its row
    (the row's ``variant`` is the key unless ``fields`` names one). ``check(fn)`` runs it on a
    poisoned output and returns its relative error against the float64 reference (NaN: inf).
    A candidate whose error is not below ``tol``, or which raises, is recorded (``ok`` False,
    ``rel_err`` or ``error``) and not timed. Every row is printed as JSON as it is done.
    ``graph``: timed as CUDA-graph replays (``measure``)."""
    rows, fns = {}, {}
    for key, (fn, fields) in cands.items():
        row = {**base, "variant": key, **fields}
        try:
            err = check(fn)
            row["rel_err"] = err if math.isfinite(err) else float("inf")
            row["ok"] = row["rel_err"] < tol
            if row["ok"]:
                fns[key] = fn
        except Exception as e:  # noqa: BLE001 -- a peer may refuse a shape; record it, go on
            row.update(ok=False, error=f"{type(e).__name__}: {str(e)[:300]}")
        rows[key] = row
    timed = interleaved(fns, dict.fromkeys(fns, flops), rounds, clock_log, graph=graph)
    for key, row in rows.items():
        row.update(timed.get(key, {}))
        print(json.dumps(row), flush=True)
    return list(rows.values())


def out_dirs(asked: list[Path] | None) -> list[Path]:
    """Where a bench writes: the ``--out`` directories, else results/ and ``$OUT`` if set."""
    return asked or [RESULTS] + ([Path(os.environ["OUT"])] if os.environ.get("OUT") else [])


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
