"""How the model's fitted constants were chosen — `python -m fidelity.calibrate [--tab2]`.

Two fits, each printed so the choice can be checked:

* **The power cap** (`PowerCap` in hardware.py), always: the clocks our H200 measured under load,
  each with the activity that drew it — a bare wgmma stream (the clock microbenchmark,
  `%globaltimer`), every traced kernel recorded with its time (cycles read off the Proton trace
  over the kernel's time; five GEMMs, six attention kernels), and where `results/h200-clock.json`
  exists the sustained L2 and exp2 streams with no tensor work (`instruments/micro/clock.py`) —
  and a least-squares plane 1/f = base + tensor·u + l2·b + exp·e through them. A stream that
  held the ceiling is a bound, not a point (the plane must reach the ceiling there): the preset's
  fit leaves it out; `power_cap_fit(bounded=True)` fits subject to those bounds, printed beside
  it (fidelity/README.md says why the preset does not take it). The activities are the measured ones (math,
  bytes and exps over the traced period), not the model's, so the fit does not lean on the model
  it calibrates.
* **FA3 tab. 2** (``--tab2``, about a minute): the `h100` preset is the GH100 die as our H200
  measured it (sim/hardware.py says what is the die's and what the board's); three constants are
  the paper's machine's and kernels': the power cap's static term, as an offset from h200's
  (``static_ns``: the board's static power, which sets the clock the paper's H100 held —
  tab. 2 does not report it), ``softmax_stall_per_elem`` (FA3's softmax dependency tail) and
  ``softmax_beside_mma`` (how much a busy tensor core slows FA3's softmax), grid-searched for the
  smallest worst relative error over tab. 2's three numbers.
* **The h200 softmax** (``--softmax``, about a minute): ``softmax_stall_per_elem`` and
  ``softmax_beside_mma`` on the `h200` preset, for the smallest worst relative error of the six
  attention kernels' cycles per K/V block that Nsight Compute counted on the plain kernels
  (`results/h200-stall.json`, `fidelity.compare.cycle_rows`) — cycles, so the power cap's clock does not enter the fit.
"""
from __future__ import annotations

import functools
import itertools
import json
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from fidelity.preset import MICRO
from records import RESULTS
from sim.config import AttentionConfig
from sim.hardware import H100, H100_STATIC_NS, H200, PowerCap
from sim.paper import TAB2, TAB2_REPORTED
from sim.predict import predict

TRACES = RESULTS / "traces"
STREAMS = RESULTS / "h200-clock.json"   # python -m instruments.micro.clock --out results
SMS = 132                       # our H200 (every results file's environment: sm_count)
TENSOR_FLOP_PER_CLK = 4096      # what the wgmma microbenchmark measured per SM (4095.9)


@dataclass(frozen=True)
class ClockPoint:
    name: str
    tensor_util: float          # tensor cores' busy fraction
    l2_bytes_per_clk: float     # L2 <-> shared memory bytes per clock per SM
    clock_hz: float
    source: str
    exps_per_clk: float = 0.0   # softmax exps per clock per SM (attention)
    workload: str = "micro"     # whose clock: "micro", "gemm" or "attention" (fidelity.crossval)
    variant: str = ""
    headdim: int | None = None


def micro_clock(path: Path = MICRO) -> ClockPoint:
    """The clock microbenchmark: m64n256k16 from two warpgroups on every SM, nothing else."""
    rows = json.loads(path.read_text())["micro"]["rows"]
    clock = next(r for r in rows if r["bench"] == "clock" and r.get("ok"))
    rate = next(r for r in rows if r["bench"] == "wgmma" and r["N"] == 256
                and r["warpgroups"] == 2 and r["dtype"] == "float16")
    return ClockPoint("wgmma stream", rate["flop_per_clk_per_sm"] / TENSOR_FLOP_PER_CLK, 0.0,
                      clock["clock_hz_globaltimer"], f"{path.name}: clock, %globaltimer")


# The clock_l2 and clock_exp rows of instruments/micro/clock.py, by the name a point gets.
STREAM_NAMES = {"clock_l2": "L2 stream", "clock_exp": "exp2 stream"}
# A run shorter than this is no point on the plane: the ~20 ms rate benchmarks read ~1.98 GHz,
# the 2.5 s wgmma stream 1.55 GHz (h200-micro.json), so the limit acts somewhere between; the
# streams run ~2 s.
SUSTAINED_S = 1.0
# Within 1 % of nvidia-smi's max SM clock, a clock is the ceiling's, not the limit's: the plane
# there only has to give at least the ceiling (`PowerCap.clock_hz` takes the min), which a
# least-squares point cannot say, so such a stream is left out of the fit (and printed).
AT_CEILING = 0.99 * H200.clock_hz


def stream_points(path: Path | None = None) -> list[ClockPoint]:
    """The sustained streams with no tensor work (`instruments/micro/clock.py`): each ok row
    that ran at least SUSTAINED_S, with the L2 bytes and exps per clock per SM it measured over
    the run. Workload "micro": no family of `fidelity.crossval` holds them. None without the
    file (`path`, else STREAMS)."""
    path = STREAMS if path is None else path
    if not path.exists():
        return []
    return [ClockPoint(STREAM_NAMES[r["bench"]], r["tensor_util"], r["l2_bytes_per_clk_per_sm"],
                       r["clock_hz_globaltimer"], f"{path.name}: {r['bench']}, %globaltimer",
                       r["exps_per_clk_per_sm"])
            for r in json.loads(path.read_text())
            if r.get("bench") in STREAM_NAMES and r.get("ok") and r["seconds"] >= SUSTAINED_S]


def trace_clock(summary: dict) -> ClockPoint:
    """A traced kernel's activity over its steady period and its clock: the cycles the slowest
    SM spends (from the trace) over the scoped kernel's time at that shape (do_bench)."""
    name, tile = summary["kernel"], summary["tile"]
    if summary["workload"] == "gemm":
        M, N, K = summary["traced_shape"]
        per_period = 2 if summary["variant"] == "ws_pingpong" else 1    # tiles per tile period
        tiles = math.ceil(M / tile["BM"]) * math.ceil(N / tile["BN"])
        k_steps = math.ceil(K / tile["BK"])
        flops = per_period * 2 * tile["BM"] * tile["BN"] * K
        a_b = k_steps * (tile["BM"] + tile["BN"]) * tile["BK"]          # A and B in, C out
        nbytes = per_period * (a_b + tile["BM"] * tile["BN"]) * 2
        period = summary["tile_period_clk"]
        cycles = math.ceil(tiles / SMS) * period / per_period     # the SMs with the most tiles
        seconds = summary["timing"]["traced_shape"]["scoped_ms"] * 1e-3
        exps = 0
    else:
        B, H, S, D = summary["timing"]["full_shape"]["shape"]
        flops = 4 * tile["BM"] * tile["BN"] * D                  # Q·Kᵀ and P·V of one block
        exps = tile["BM"] * tile["BN"]                           # the block's scores
        nbytes = 2 * tile["BN"] * D * 2                          # K and V of one block
        period = summary["period_clk"]
        waves = math.ceil(B * H * math.ceil(S / tile["BM"]) / SMS)
        cycles = waves * summary["cta_span_clk"]                 # one CTA per SM at a time
        seconds = summary["timing"]["full_shape"]["scoped_ms"] * 1e-3
    return ClockPoint(name, flops / TENSOR_FLOP_PER_CLK / period, nbytes / period,
                      cycles / seconds, f"traces/{name}.summary.json", exps / period,
                      summary["workload"], summary["variant"],
                      summary["traced_shape"][3] if summary["workload"] == "attention" else None)


def clock_points(streams: Path | None = None) -> list[ClockPoint]:
    """The microbenchmarks' clocks (the wgmma stream; the L2 and exp2 streams under the
    ceiling, from `streams` or STREAMS where it exists) and each traced kernel's; a trace
    recorded without its kernel's time (``instruments.trace --no-timing``) gives no clock."""
    traced = [json.loads(p.read_text()) for p in sorted(TRACES.glob("*.summary.json"))]
    below = [p for p in stream_points(streams) if p.clock_hz < AT_CEILING]
    # `trace_clock` reads the cycles of one wave of CTAs: the S 1K probes run many waves
    return [micro_clock()] + below + [trace_clock(s) for s in traced
                                      if "full_shape" in s.get("timing", {})
                                      and s.get("period_clk") and _one_wave(s)]


def _one_wave(summary: dict) -> bool:
    """Whether the traced launch was one CTA per SM (GEMM: persistent, so always)."""
    if summary["workload"] == "gemm":
        return True
    B, H, S, _ = summary["traced_shape"]
    return B * H * math.ceil(S / summary["tile"]["BM"]) <= SMS


def ceiling_points(streams: Path | None = None) -> list[ClockPoint]:
    """The sustained streams that held the ceiling (`stream_points` at or above AT_CEILING): each
    a bound on the plane — its clock there must reach the ceiling — not a point."""
    return [p for p in stream_points(streams) if p.clock_hz >= AT_CEILING]


def _activity(p: ClockPoint) -> list[float]:
    return [1.0, p.tensor_util, p.l2_bytes_per_clk, p.exps_per_clk]


def fit_power_cap(points: list[ClockPoint], exponent: int = 1,
                  bounds: list[ClockPoint] = ()) -> tuple[PowerCap, list[float]]:
    """Least squares of f^-exponent (ns) on (1, u, b, e); exponent 1 is `PowerCap`'s form.
    `bounds`: points whose clock the plane must reach at least the ceiling (`H200.clock_hz`)
    at, as a stream that ran at the ceiling says — least squares subject to them, by active
    set: a bound the fit breaks is held as an equality (Lagrange), until none is broken.
    Returns the fit (for exponent 1; else its coefficients scaled to ns at 1 GHz) and each
    point's clock as the fit has it."""
    a = np.array([_activity(p) for p in points])
    y = np.array([(1e9 / p.clock_hz) ** exponent for p in points])
    limit = (1e9 / H200.clock_hz) ** exponent
    rows = [np.array(_activity(p)) for p in bounds]
    active: list[int] = []
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    while True:
        broken = [i for i, r in enumerate(rows) if i not in active and r @ coef > limit * (1 + 1e-9)]
        if not broken:
            break
        active.append(broken[0])
        c = np.array([rows[i] for i in active])
        kkt = np.block([[a.T @ a, c.T], [c, np.zeros((len(active), len(active)))]])
        coef = np.linalg.solve(kkt, np.concatenate([a.T @ y, np.full(len(active), limit)]))[:4]
    fitted = [1e9 / v ** (1 / exponent) for v in a @ coef]
    return PowerCap(*(float(c) for c in coef)), fitted


def power_cap_fit(points: list[ClockPoint] | None = None, exponent: int = 1,
                  streams: Path | None = None, bounded: bool = False
                  ) -> tuple[PowerCap, list[float]]:
    """The plane through `points` (default: every `clock_points`): least squares, the `h200`
    preset's fit; with `bounded`, held to reach the ceiling at every stream that ran there
    (`ceiling_points`) — what `python -m fidelity crossval --bounded` cross-validates."""
    points = clock_points(streams) if points is None else points
    return fit_power_cap(points, exponent, ceiling_points(streams) if bounded else ())


def print_power_cap() -> PowerCap:
    points = clock_points()
    cap, fitted = power_cap_fit(points)
    _, cubic = power_cap_fit(points, exponent=3)
    held, held_fitted = power_cap_fit(points, bounded=True)
    print(f"{'point':24s} {'tensor u':>8s} {'L2 B/clk':>8s} {'exp/clk':>7s} {'measured':>9s} "
          f"{'fit':>6s} {'1/f³ fit':>8s} {'bounded':>7s}  source")
    for p, f, g, b in zip(points, fitted, cubic, held_fitted):
        print(f"{p.name:24s} {p.tensor_util:8.3f} {p.l2_bytes_per_clk:8.1f} {p.exps_per_clk:7.2f} "
              f"{p.clock_hz / 1e9:7.3f} G {f / 1e9:6.3f} {g / 1e9:8.3f} {b / 1e9:7.3f}  {p.source}")
    for p in ceiling_points():
        args = (p.tensor_util, p.l2_bytes_per_clk, math.inf, p.exps_per_clk)
        print(f"{p.name:24s} {p.tensor_util:8.3f} {p.l2_bytes_per_clk:8.1f} {p.exps_per_clk:7.2f} "
              f"{p.clock_hz / 1e9:7.3f} G {cap.clock_hz(*args) / 1e9:6.3f} {'':8s} "
              f"{min(held.clock_hz(*args), H200.clock_hz) / 1e9:7.3f}  {p.source}: at the "
              "ceiling, a bound (not in the fit; the bounded fit reaches it)")
    for name, c in (("PowerCap", cap), ("bounded ", held)):
        print(f"\n{name}(base_ns={c.base_ns:.4f}, tensor_ns={c.tensor_ns:.4f}, "
              f"l2_ns_per_byte={c.l2_ns_per_byte:.6f}, exp_ns={c.exp_ns:.5f})", end="")
    print()
    return cap

TARGETS = {v: float(r) for v, r in TAB2_REPORTED.items()}      # FA3 tab. 2, TFLOP/s
GRID = {
    "static_ns": [-0.09, -0.085, -0.08, -0.075, -0.07],
    "softmax_beside_mma": [1.75, 2.0, 2.25],
    "softmax_stall_per_elem": [0.0, 0.01],
}
SOFTMAX_GRID = {
    "softmax_stall_per_elem": [0.0, 0.01, 0.02],
    "softmax_beside_mma": [1.8, 2.0, 2.2],
}


def evaluate(static_ns: float = H100_STATIC_NS, **constants) -> dict[str, float]:
    """tab. 2's three kernels on `h100` with its power cap's static term `static_ns` off h200's
    and `constants` changed."""
    return dict(_evaluated(static_ns, tuple(sorted(constants.items()))))


@functools.cache
def _evaluated(static_ns: float, constants: tuple) -> tuple:
    cap = H200.power_cap
    hw = H100.with_(power_cap=replace(cap, base_ns=cap.base_ns + static_ns), **dict(constants))
    return tuple((v, predict(AttentionConfig(variant=v, **TAB2), hw).tflops) for v in TARGETS)


def worst_error(result: dict[str, float], targets=TARGETS) -> float:
    return max(abs(result[v] / TARGETS[v] - 1) for v in targets)


def grid_search(grid: dict, score, echo: bool = True) -> dict:
    """Every combination of `grid`; `score(constants)` -> (worst error, {column: value}). Prints
    each (the columns are the first score's; nothing with `echo` False) and returns the best
    constants (the first of equals)."""
    names = list(grid)
    best = None
    for values in itertools.product(*grid.values()):
        constants = dict(zip(names, values))
        err, shown = score(constants)
        if echo:
            if best is None:
                columns = list(shown)
                print("  ".join(f"{n:>22s}" for n in names) + "  "
                      + "  ".join(f"{c:>14s}" for c in columns) + "  worst")
            print("  ".join(f"{x:22g}" for x in values) + "  "
                  + "  ".join(f"{shown[c]:14.1f}" for c in columns) + f"  {err:5.1%}", flush=True)
        if best is None or err < best[0]:
            best = (err, constants)
    if echo:
        print(f"\nbest: {best[1]} — worst error {best[0]:.1%}")
    return best[1]


def fit_tab2(echo: bool = True, targets=TARGETS) -> dict:
    """The tab. 2 grid's best for the kernels `targets` names (all three: the `h100` preset's fit;
    two: `tab2_held_out`)."""
    def score(constants):
        r = evaluate(**constants)
        return worst_error(r, targets), r
    return grid_search(GRID, score, echo)


def tab2_held_out() -> dict[str, tuple[dict, float]]:
    """Each of tab. 2's kernels held out: the grid fitted to the other two, and the held-out
    kernel's error with what it chose — the cross-validation of `h100`'s three fitted
    constants (printed by `python -m fidelity crossval --tab2`)."""
    out = {}
    for v, reported in TARGETS.items():
        fit = fit_tab2(echo=False, targets=[t for t in TARGETS if t != v])
        out[v] = (fit, evaluate(**fit)[v] / reported - 1)
    return out


@functools.cache
def softmax_cycle_rows(constants: tuple[tuple[str, float], ...]) -> tuple:
    """The six plain attention kernels' cycles per K/V block (`fidelity.compare.cycle_rows`) on
    the h200 preset with `constants` (name, value) changed; kept, since a grid asks again."""
    from fidelity.compare import cycle_rows
    from sim.hardware import H200
    return tuple(cycle_rows(H200.with_(**dict(constants))))


def fit_h200_softmax(keep=None, echo: bool = True, fixed: tuple = ()) -> dict:
    """The softmax grid's best for the cycle rows `keep(row)` admits (all of them: calibrate's
    fit; fewer: `fidelity.crossval` holding a family out), with the h200 preset's `fixed`
    (name, value) pairs changed beside the grid's (a what-if's refit)."""
    def score(constants):
        rows = [r for r in softmax_cycle_rows(tuple(constants.items()) + tuple(fixed))
                if keep is None or keep(r)]
        return max(abs(r.error) for r in rows), {r.variant: r.model for r in rows}
    return grid_search(SOFTMAX_GRID, score, echo)


ALIGN_GRID = {"tma_misaligned_factor": [1.4, 1.45, 1.5, 1.55, 1.6, 1.65, 1.7, 1.75, 1.8]}


def alignment_pairs() -> list[tuple[tuple, str, float]]:
    """The alignment probe (h200-align.json) as ((M, N, K), variant, measured time with the
    misaligned strides over the time with 128-byte ones): each kernel on the same logical shape
    twice, so the ratio is the strides' alone."""
    path = RESULTS / "h200-align.json"
    rows = json.loads(path.read_text())["rows"] if path.exists() else []
    t = {(r["M"], r["N"], r["K"], r["variant"], r["layout"]): r["device_ms"]
         for r in rows if r.get("ok")}
    out = []
    for (M, N, K, v, layout), ms in t.items():
        aligned = t.get((M, N, K, v, "padded")) if layout == "contiguous" else (
            t.get((M, N, K, v, "contiguous")) if layout == "misaligned" else None)
        if aligned:
            out.append(((M, N, K), v, ms / aligned))
    return out


def fit_h200_alignment(pairs: list | None = None, echo: bool = True) -> dict:
    """The `--align` grid's best for `pairs` (all of `alignment_pairs`: calibrate's fit)."""
    from sim.config import GemmConfig
    from sim.hardware import H200
    from sim.predict import predict

    pairs = alignment_pairs() if pairs is None else pairs

    def score(constants):
        hw = H200.with_(**constants)
        shown, worst = {}, 0.0
        for (M, N, K), v, measured in pairs:
            t = [predict(GemmConfig(m=M, n=N, k=K, variant=v, aligned=a), hw).seconds
                 for a in (False, True)]
            shown[f"{v} {M}"] = t[0] / t[1]
            worst = max(worst, abs(t[0] / t[1] / measured - 1))
        return worst, shown
    if echo:
        print("measured: " + "  ".join(f"{v} {s[0]}: {r:.2f}" for s, v, r in pairs))
    return grid_search(ALIGN_GRID, score, echo)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    print_power_cap()
    if "--tab2" in argv:
        print()
        fit_tab2()
    if "--softmax" in argv:
        print()
        fit_h200_softmax()
    if "--align" in argv:
        print()
        fit_h200_alignment()


if __name__ == "__main__":
    main()
