"""The model against the machine: every committed H200 measurement of our kernels, predicted.

`python -m fidelity [--hardware h200] [--all]` reads `results/h200.json` (GEMM) and
`results/h200-attention.json` (attention; with `--all` also the shipped kernels' rows of
the one-warpgroup fence A/B, `h200-ab-fence-64x128.json`), builds the model's configuration of each
measured kernel — same variant, shape, dtype, ring depth and tile — and prints measured, model and
their relative error. By default only the headline shapes (GEMM 8192³, attention at FA3 tab. 2's
shape) are predicted; `--all` takes every row. Vendor peers (cuBLAS, SDPA) are not our schedules
and are left out.

It then compares cycles per K/V block of the six attention kernels with what Nsight Compute
counted on the plain kernels (`h200-stall.json`; with `--all` also fa3 at the sweep's shapes,
`h200-stall-sweep.json`, and each GEMM's cycles at the GEMM sweep's, `h200-gemm-sweep.json`) —
the model's schedule
without its clock — and, where a kernel has both its cycles and its time on the device, the clock
it ran at against the model's.

The GEMM sweep's small sizes are host-bound under `instruments.bench`'s do_bench: Triton's launch
path costs 20-100 µs a call, more than a 1024³ or 2048³ kernel runs (`h200-gemm-sweep.json`:
CUPTI's device time in the same loop). The model predicts the kernel, so
with `--all` the GEMM sweep's rows are measured by their device time.

Clock: the model works in clocks, and our H200 runs anywhere from 1.3 to 1.98 GHz depending on
what it runs (the 700 W power cap). On the `h200` preset each kernel runs at the clock the model
derives from its own activity (`PowerCap`, sim/predict.py); the table prints it beside the clock
nvidia-smi logged for that shape, which under the cap reads high (fidelity/README.md). On a preset without a power cap, rows are predicted at the preset's clock.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass

from records import RESULTS
from sim import attention, gemm
from sim.config import AttentionConfig, GemmConfig
from sim.config import kernel_tile as config_tile
from sim.hardware import Hardware
from sim.predict import predict

DTYPE = {"float16": "fp16", "bfloat16": "bf16"}
HEADLINE_GEMM = (8192, 8192, 8192)
HEADLINE_ATTENTION = (4, 16, 8448, 128)
SMS_MEASURED = 132              # our H200's SMs (every results file's environment)


@dataclass
class Row:
    workload: str
    label: str              # variant and what was varied, as measured
    variant: str
    shape: str
    measured: float
    model: float | None     # None: the model refuses the configuration (and `note` says why)
    note: str = ""
    override: bool = False  # a tile the kernel does not take by default (an experiment)
    clock_hz: float = 0.0   # the clock the model ran it at
    logged_mhz: float | None = None     # the median clock nvidia-smi logged for its shape
    spread: tuple[float, float] | None = None   # measured: its rounds' lowest and highest
    config: AttentionConfig | GemmConfig | None = None  # what the model ran (fidelity.crossval)

    @property
    def error(self) -> float | None:
        return None if self.model is None else self.model / self.measured - 1


def _load(name: str, key: str) -> list[dict]:
    path = RESULTS / name
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    return data.get(key, {}).get("rows", [])


def _gemm_key(r: dict) -> tuple:
    return r["M"], r["N"], r["K"], r["dtype"]


def _attention_key(r: dict) -> tuple:
    return r["B"], r["H"], r["S"], r["d"], r["causal"], r["dtype"]


def _sweep_rows() -> dict[tuple, dict]:
    """(M, N, K, variant) -> its row of the GEMM sweep (each variant's default config):
    Nsight Compute's cycles, CUPTI's device time, the clock the two give."""
    path = RESULTS / "h200-gemm-sweep.json"
    rows = json.loads(path.read_text())["rows"] if path.exists() else []
    return {(r["M"], r["N"], r["K"], r["variant"]): r for r in rows}


def gemm_rows(hw: Hardware | None, everything: bool) -> list[Row]:
    """The GEMM kernels' measured rows, each predicted (`compare`'s GEMM half)."""
    out = []
    rows = _load("h200.json", "gemm")
    clocks = run_clocks(rows, key=_gemm_key)
    device = _sweep_rows() if everything else {}
    for r in rows:
        base = r["variant"]
        if base not in gemm.VARIANTS or not r.get("ok") or "tflops" not in r:
            continue
        if not everything and (r["M"], r["N"], r["K"]) != HEADLINE_GEMM:
            continue
        bm, bn, bk = r.get("tile") or (None, None, None)
        cfg = GemmConfig(m=r["M"], n=r["N"], k=r["K"], dtype=DTYPE[r["dtype"]], variant=base,
                         block_m=bm, block_n=bn, block_k=bk, stages=r.get("stages"),
                         persistent=r.get("persistent"))
        label = f"{base} s{r.get('stages')}" + ("" if r.get("persistent") in (None, True) else " np")
        if r.get("tile_override"):
            label += f" {bm}×{bn}×{bk}"
        measured, logged = r["tflops"], clocks.get(_gemm_key(r))
        g1 = device.get((r["M"], r["N"], r["K"], base))
        if (g1 and (r["M"], r["N"], r["K"]) != HEADLINE_GEMM and r["dtype"] == "float16"
                and g1.get("device_tflops")):
            measured, logged = g1["device_tflops"], g1["clock_mhz_in_loop"]
            label += " dev"
        row = _predict("gemm", label, base, f"{r['M']}×{r['N']}×{r['K']} {r['dtype']}",
                       measured, cfg, hw, logged)
        row.override = bool(r.get("tile_override"))
        row.spread = _spread(r) if measured == r["tflops"] else None
        out.append(row)
    return out


def _spread(r: dict) -> tuple[float, float] | None:
    lo, hi = r.get("tflops_min"), r.get("tflops_max")
    return (lo, hi) if lo and hi else None


def _ab_rows() -> list[dict]:
    """The shipped kernels' rows of the fence A/B runs (instruments/tools/ab_fence.py) at a tile of
    their own (one consumer warpgroup, ``--tile 64x128``), as bench rows; the "no fence" side is
    not a kernel we ship."""
    path = RESULTS / "h200-ab-fence-64x128.json"
    if not path.exists():
        return []
    rows = json.loads(path.read_text())["rows"]
    return [{**r, "ok": True, "tile": [int(x) for x in r["tile"].split("x")]}
            for r in rows if not r["variant"].endswith("no fence") and "tflops" in r]


def attention_rows(hw: Hardware | None, everything: bool) -> list[Row]:
    """The attention kernels' measured rows, each predicted at the tile it ran (`compare`'s
    attention half: the headline shape, or with `everything` every measured shape)."""
    out = []
    rows = _load("h200-attention.json", "attention")
    clocks = run_clocks(rows, key=_attention_key)
    if everything:
        rows = rows + _ab_rows()
    for r in rows:
        base = r["variant"].split(":")[0]
        if base not in attention.VARIANTS or not r.get("ok") or "tflops" not in r:
            continue
        if not everything and ((r["B"], r["H"], r["S"], r["d"]) != HEADLINE_ATTENTION
                               or r["causal"]):
            continue
        bm, bn, consumers = kernel_tile(base, r)
        cfg = AttentionConfig(batch=r["B"], heads=r["H"], seqlen=r["S"], headdim=r["d"],
                              causal=r["causal"], dtype=DTYPE[r["dtype"]], variant=base,
                              block_m=bm, block_n=bn, consumers=consumers,
                              stages=r.get("stages") or 2)
        shape = f"B{r['B']} H{r['H']} S{r['S']} d{r['d']}{' causal' if r['causal'] else ''}"
        label = f"{base} s{cfg.stages}" + (f" {bm}×{bn}" if r.get("tile") else "")
        row = _predict("attention", label, base, shape, r["tflops"], cfg, hw,
                       r.get("sm_mhz") if r.get("tile") else clocks.get(_attention_key(r)))
        row.override = bool(r.get("tile"))
        row.spread = _spread(r)
        out.append(row)
    return out


def kernel_tile(variant: str, row: dict) -> tuple[int, int, int]:
    """The tile the measured kernel ran: the row's override, else the kernel's own default, which
    the model reads from the same table (`sim.config.kernel_tile`, sim/tiles.json's "gluon": our
    Gluon kernels need power-of-two tiles, so FA3's d128 128×176 runs as 128×128)."""
    if row.get("tile"):
        bm, bn = row["tile"]
        return bm, bn, bm // 64
    return tuple(config_tile(variant, row["d"], row["causal"]))


def run_clocks(rows: list[dict], key) -> dict:
    """shape key → median SM clock (MHz) logged over all rows of that shape (None if none)."""
    by: dict = {}
    for r in rows:
        if r.get("sm_mhz"):
            by.setdefault(key(r), []).append(r["sm_mhz"])
    return {k: statistics.median(v) for k, v in by.items()}


def _predict(workload, label, variant, shape, measured, cfg, hw, logged_mhz) -> Row:
    if hw is None:          # the measured row and its configuration, unpredicted (fidelity.crossval)
        return Row(workload, label, variant, shape, measured, None, "not predicted",
                   logged_mhz=logged_mhz, config=cfg)
    try:
        p = predict(cfg, hw)
    except ValueError as e:
        return Row(workload, label, variant, shape, measured, None, str(e), logged_mhz=logged_mhz,
                   config=cfg)
    return Row(workload, label, variant, shape, measured, p.tflops, clock_hz=p.clock_hz,
               logged_mhz=logged_mhz, config=cfg)


def compare(hw: Hardware | None, everything: bool = False) -> list[Row]:
    """Every measured row of our kernels (the headlines, or with `everything` all), predicted on
    `hw`; with `hw` None the rows and their configurations only, nothing predicted."""
    return gemm_rows(hw, everything) + attention_rows(hw, everything)


def cycle_rows(hw: Hardware, everything: bool = False) -> list[Row]:
    """Cycles per K/V block (BM × BN of the kernel's tile, one SM) of each plain attention
    kernel at the headline shape, as Nsight Compute counted them (`h200-stall.json`:
    the busiest SM's cycles over its blocks) and as the model has them (its time × its clock) —
    the comparison without the clock, which the power cap sets on the machine and `PowerCap`
    in the model. `everything` adds fa3 at the sweep's shapes (`h200-stall-sweep.json`)."""
    B, H, S, D = HEADLINE_ATTENTION
    runs = [("h200-stall.json", lambda r: (B, H, S, D))]
    if everything:
        runs.append(("h200-stall-sweep.json", lambda r: (r["B"], r["H"], r["S"], r["d"])))
    out = []
    for name, shape_of in runs:
        path = RESULTS / name
        for r in json.loads(path.read_text())["rows"] if path.exists() else []:
            b, h, s, d = shape_of(r)
            bm, bn, consumers = kernel_tile(r["variant"], {"d": d, "causal": False,
                                                            "stages": r.get("stages")})
            cfg = AttentionConfig(batch=b, heads=h, seqlen=s, headdim=d, variant=r["variant"],
                                  block_m=bm, block_n=bn, consumers=consumers,
                                  stages=r.get("stages") or 2)
            row = _predict("cycles", f"{r['variant']} s{cfg.stages}", r["variant"],
                           f"B{b} H{h} S{s} d{d}", r["clk_per_block"], cfg, at_clock(hw, r),
                           None)
            if row.model is not None:       # TFLOP/s at its clock -> cycles per block
                bm, bn = bm or 128, bn or 128
                blocks = b * h * -(-s // bm) * -(-s // bn) / SMS_MEASURED
                row.model = 4 * b * h * s * s * d / (row.model * 1e12) * row.clock_hz / blocks
            out.append(row)
    if everything:
        out += gemm_cycle_rows(hw)
    return out


def gemm_cycles(r: dict, hw: Hardware) -> Row:
    """One row of the GEMM sweep: the busiest SM's cycles, measured and the model's (its time × clock)."""
    bm, bn, bk = r["tile"]
    cfg = GemmConfig(m=r["M"], n=r["N"], k=r["K"], variant=r["variant"], block_m=bm, block_n=bn,
                     block_k=bk, stages=r["stages"], persistent=r["persistent"])
    label = f"{r['variant']} s{r['stages']}" + ("" if r["persistent"] else " np")
    row = _predict("cycles", label, r["variant"], f"{r['M']}×{r['N']}×{r['K']}", r["cycles_max"],
                   cfg, at_clock(hw, r), r.get("clock_mhz_in_loop"))
    if row.model is not None:           # TFLOP/s at its clock -> the busiest SM's cycles
        row.model = cfg.flops / (row.model * 1e12) * row.clock_hz
        if hw.power_cap:                # the clock the model gives it under its power cap
            row.clock_hz = predict(cfg, hw).clock_hz
    return row


def at_clock(hw: Hardware, r: dict) -> Hardware:
    """`hw` at the clock Nsight Compute saw the kernel run at (its `sm__cycles_elapsed.avg.
    per_second`, GHz or Hz), without the power cap: cycles compared at the same clock, since
    at another one the copies' share of L2 per cycle differs."""
    clock = r.get("clock_ghz")
    if not clock:
        return hw
    return hw.with_(clock_hz=clock * 1e9 if clock < 1e3 else clock, power_cap=None)


def gemm_cycle_rows(hw: Hardware) -> list[Row]:
    """The GEMM sweep's kernels in cycles (`h200-gemm-sweep.json`)."""
    return [gemm_cycles(r, hw) for r in _sweep_rows().values()]


def measured_attention_ladder() -> dict[str, float]:
    """Best measured TFLOP/s of each attention kernel at FA3 tab. 2's shape, non-causal fp16: ours,
    and the SDPA peers of the same run (flash as `fa2`, `sdpa_cudnn`); empty without results."""
    best: dict[str, float] = {}
    for r in _load("h200-attention.json", "attention"):
        if ((r["B"], r["H"], r["S"], r["d"]) == HEADLINE_ATTENTION and not r["causal"]
                and r["dtype"] == "float16" and r.get("ok") and "tflops" in r):
            v = r["variant"].split(":")[0]
            best[v] = max(best.get(v, 0.0), r["tflops"])
    if "sdpa_flash" in best:                 # SDPA's flash backend is FA2: the `fa2` schedule
        best["fa2"] = best.pop("sdpa_flash")
    return best


def summary(rows: list[Row]) -> dict:
    errs = [abs(r.error) for r in rows if r.error is not None]
    return {
        "rows": len(rows),
        "predicted": len(errs),
        "within_10pct": sum(e <= 0.10 for e in errs),
        "median_abs_error": sorted(errs)[len(errs) // 2] if errs else math.nan,
        "max_abs_error": max(errs, default=math.nan),
    }


def best_by_variant(rows: list[Row], workload: str, shape: str) -> dict[str, tuple[float, float]]:
    """variant → (best measured, model at that configuration) among the rows of one shape that
    the model predicts, leaving out tile experiments."""
    best: dict[str, tuple[float, float]] = {}
    for r in rows:
        keep = r.workload == workload and r.shape == shape and r.model is not None
        if keep and not r.override and (r.variant not in best or r.measured > best[r.variant][0]):
            best[r.variant] = (r.measured, r.model)
    return best


def resolved(rows: list[Row], workload: str, a: str, b: str, shape: str) -> bool:
    """Whether the machine orders variants a and b at `shape`: their best rows' rounds do not
    overlap (instruments.bench times each in interleaved rounds; a pair inside each other's spread is
    a tie the measurement does not break)."""
    best: dict[str, Row] = {}
    for r in rows:
        keep = r.workload == workload and r.shape == shape and r.model is not None
        if keep and not r.override and (r.variant not in best
                                        or r.measured > best[r.variant].measured):
            best[r.variant] = r
    sa, sb = best[a].spread, best[b].spread
    return sa is None or sb is None or sa[1] < sb[0] or sb[1] < sa[0]


def table(rows: list[Row]) -> str:
    lines = [(f"{'workload':9s} {'kernel':26s} {'shape':30s} {'measured':>8s} {'model':>7s} "
              f"{'error':>7s} {'clock':>5s} {'logged':>6s}")]
    for r in rows:
        model = "refused" if r.model is None else f"{r.model:7.0f}"
        err = "" if r.error is None else f"{r.error:+7.1%}"
        clock = f"{r.clock_hz / 1e6:5.0f}" if r.clock_hz else ""
        logged = f"{r.logged_mhz:6.0f}" if r.logged_mhz else ""
        lines.append(f"{r.workload:9s} {r.label:26s} {r.shape:30s} {r.measured:8.0f} {model:>7s} "
                     f"{err:>7s} {clock:>5s} {logged:>6s}" + (f"  ({r.note})" if r.note else ""))
    lines.append("(clock: the model's, MHz, under the power cap; logged: nvidia-smi's median for "
                 "the shape)")
    s = summary(rows)
    lines.append(f"\n{s['predicted']} of {s['rows']} measured kernels predicted; "
                 f"{s['within_10pct']} within ±10%; median |error| {s['median_abs_error']:.1%}, "
                 f"max {s['max_abs_error']:.1%}")
    return "\n".join(lines)


def cycle_table(rows: list[Row]) -> str:
    lines = [("cycles, one SM (Nsight Compute on the plain kernels: attention per K/V block, "
              "h200-stall*.json; GEMM the busiest SM's whole launch, h200-gemm-sweep.json), "
              "against the model's "
              "time × its clock; with the clock the kernel ran at in do_bench's loop (its cycles "
              "over its device time) and the model's"),
             (f"{'kernel':16s} {'shape':22s} {'measured':>9s} {'model':>9s} {'error':>7s} "
              f"{'MHz':>5s} {'model':>5s}")]
    for r in rows:
        model = "refused" if r.model is None else f"{r.model:9.0f}"
        err = "" if r.error is None else f"{r.error:+7.1%}"
        clk = f"{r.logged_mhz:5.0f} {r.clock_hz / 1e6:5.0f}" if r.logged_mhz else ""
        lines.append(f"{r.label:16s} {r.shape:22s} {r.measured:9.0f} {model:>9s} {err:>7s} {clk}")
    s = summary(rows)
    lines.append(f"{s['within_10pct']} of {s['predicted']} within ±10%; median |error| "
                 f"{s['median_abs_error']:.1%}, max {s['max_abs_error']:.1%}")
    return "\n".join(lines)
