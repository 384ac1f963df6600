"""Each attention kernel of the fidelity table launched once for Nsight Compute's full set — the
plain kernels, no Proton scopes: cycles per SM, each pipe's busy share, and where the warps spend
their time, per SASS instruction (PC sampling). The model predicts cycles; the scoped traces
cost 11-18 % of them, this costs none.

    ncu --clock-control none --set full --import-source no -k regex:'^(sequential|pipelined|ws|
        ws_pingpong|overlap|fa3)_kernel' -o stall python3 -m instruments.tools.stall_probe
    ncu -i stall.ncu-rep --page raw --csv > raw.csv
    ncu -i stall.ncu-rep --page source --csv --print-source sass > source.csv
    python3 -m instruments.tools.stall_probe --parse raw.csv source.csv --out h200-stall.json

The launches are `l2_probe`'s attention lines (B 4 H 16 S 8448 d 128 fp16), each checked against
torch after it ran; `bash instruments/device/session.sh stall_probe` runs the ncu commands.

The ledger: the sampler picks one resident warp of an SM sub-partition at a fixed interval, so a
warp's share of the samples is its share of the time (every warp of these kernels is resident
from start to end). Cycles per K/V block a consumer warp spends on a class of instructions =
its samples there / (all samples / warps per CTA) × cycles per block, over the instructions the
consumer loop runs once a block (those executed `loop_exec` times — the most-sampled count) by
its 8 consumer warps.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

from records.sass import read_source

from .l2_probe import ATTN_SHAPE, CONFIGS, run

ATTENTION = [c for c in CONFIGS if c[0] == "attention"]
CONSUMERS = 2               # every one of them runs 128-row tiles: two consumer warpgroups
SWEEP = [(16, 32, 1024, 64), (4, 32, 4096, 64), (1, 32, 16384, 64), (16, 16, 1024, 128),
         (4, 16, 4096, 128), (1, 16, 16384, 128), (16, 8, 1024, 256), (4, 8, 4096, 256),
         (1, 8, 16384, 256)]     # the attention sweep's shapes (instruments.bench_attention --sweep)
METRICS = {  # what each kernel's row keeps, and the name it gets
    "gpu__time_duration.sum": "time_ns",
    "sm__cycles_elapsed.max": "cycles_max",
    "sm__cycles_elapsed.avg.per_second": "clock_ghz",         # ncu reports it in GHz
    "launch__block_size": "threads",
    "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.avg.pct_of_peak_sustained_elapsed":
        "tensor_math_pct",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": "xu_pct",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "fma_pct",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": "alu_pct",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_pct",
}
CLASSES = [  # (class, opcode pattern), first match wins
    ("mbarrier wait", r"SYNCS\.PHASECHK|^BRA"),
    ("wgmma issue", r"HGMMA|WARPGROUP\.ARRIVE"),
    ("wgmma wait", r"WARPGROUP\.DEPBAR"),
    ("bar.sync + arrive", r"BAR\.SYNC|SYNCS\.ARRIVE"),
    ("exp (MUFU)", r"MUFU"),
    ("row max (FMNMX, SHFL)", r"FMNMX|SHFL"),
    ("pack (F2FP)", r"F2FP"),
    ("FMA pipe (FFMA, FADD, FMUL)", r"^F(FMA|ADD|MUL)"),
]


def _num(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def _raw_rows(path: Path) -> list[tuple[str, dict]]:
    """ncu's raw page, one (kernel name, METRICS it has) per profiled launch, in launch order."""
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    out = []
    for r in rows[2:]:                                   # rows[1] holds the units
        d = dict(zip(header, r))
        out.append((d["Kernel Name"], {name: _num(d[k]) for k, name in METRICS.items() if k in d}))
    return out


def _source(path: Path) -> dict[str, list[dict]]:
    """Kernel name -> its SASS lines (the last launch of that name)."""
    return dict(_sources(path))


def _sources(path: Path) -> list[tuple[str, list[dict]]]:
    """Each profiled launch's (kernel name, SASS lines: opcode, executions, samples, samples per
    stall reason), in launch order: `records.sass.read_source`'s lines as the ledger reads them."""
    return [(name, [{"op": ln.opcode, "exec": ln.executed, "samples": ln.samples,
                     "stalls": ln.stalls} for ln in lines])
            for name, lines in read_source(path)]


def ledger(lines: list[dict], warps: int, clk_per_block: float,
           consumer_warps: int = 4 * CONSUMERS) -> dict:
    """Cycles per block a consumer warp spends on each class of its loop's instructions."""
    total = sum(ln["samples"] for ln in lines)
    by_exec: dict[float, float] = {}
    for ln in lines:
        by_exec[ln["exec"]] = by_exec.get(ln["exec"], 0.0) + ln["samples"]
    loop_exec = max(by_exec, key=by_exec.get)
    loop = [ln for ln in lines if ln["exec"] == loop_exec]
    # the loop's instructions are the consumer warps'; each warp holds total / warps of the samples
    per_warp = sum(ln["samples"] for ln in loop) / consumer_warps
    classes: dict[str, float] = {}
    reasons: dict[str, float] = {}
    for ln in loop:
        cls = next((c for c, pat in CLASSES if re.search(pat, ln["op"])), "other")
        classes[cls] = classes.get(cls, 0.0) + ln["samples"]
        for k, v in ln["stalls"].items():
            reasons[k] = reasons.get(k, 0.0) + v
    scale = clk_per_block / (total / warps)
    return {"loop_exec": loop_exec, "consumer_warps": consumer_warps,
            "loop_share_of_a_warp": per_warp / (total / warps),
            "clk_per_block": {k: round(v / consumer_warps * scale, 1)
                              for k, v in sorted(classes.items(), key=lambda kv: -kv[1])},
            "stall_reasons": {k: round(v / sum(reasons.values()), 4)
                              for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]) if v}}


def parse(raw: Path, source: Path) -> list[dict]:
    metrics, sass = dict(_raw_rows(raw)), _source(source)
    B, H, S, _ = ATTN_SHAPE
    out = []
    for _, variant, stages in ATTENTION:
        name = f"{variant}_kernel"
        m = metrics[name]
        blocks = B * H * (S // 128) * (S // 128) / 132      # K/V blocks per SM (128 x 128 tiles)
        row = {"variant": variant, "stages": stages, **m,
               "clk_per_block": m["cycles_max"] / blocks}
        row["ledger"] = ledger(sass[name], int(m["threads"]) // 32, row["clk_per_block"])
        out.append(row)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parse", nargs=2, type=Path, metavar=("RAW", "SOURCE"),
                   help="ncu's raw and source CSV pages to turn into JSON")
    p.add_argument("--out", type=Path)
    p.add_argument("--log", default=None, help="where the run's logs are committed")
    p.add_argument("--sweep", action="store_true", help="launch (or, with --parse RAW -, parse) "
                   "fa3 at the sweep's shapes instead")
    p.add_argument("--dims", action="store_true", help="launch (or parse) fa3 at d 64 and 256")
    a = p.parse_args(argv)
    if a.sweep and not a.parse:
        return run_sweep()
    if a.dims and not a.parse:
        return run_dims()
    if a.dims:
        rows = parse_dims(*a.parse)
        if a.out:
            a.out.write_text(json.dumps({"what": "Nsight Compute --set full, --clock-control "
                                                 "none, one plain launch of fa3 at d 64 and 256",
                                         "log": a.log, "rows": rows}, indent=1) + "\n")
        for r in rows:
            print(f"d{r['d']}: {r['clk_per_block']:6.0f} clk/block  tensor "
                  f"{r['tensor_math_pct']:4.1f} %  {r['ledger']['clk_per_block']}")
        return 0
    if not a.parse:
        return run(ATTENTION)
    if a.sweep:
        rows = parse_sweep(a.parse[0])
        if a.out:
            a.out.write_text(json.dumps({"what": "Nsight Compute, --clock-control none, one plain "
                                                 "launch of fa3 at each sweep shape", "log": a.log,
                                         "rows": rows}, indent=1) + "\n")
        for r in rows:
            print(f"B{r['B']} H{r['H']} S{r['S']} d{r['d']}: {r['clk_per_block']:6.0f} clk/block")
        return 0
    rows = parse(*a.parse)
    text = json.dumps({"what": "Nsight Compute --set full, --clock-control none, one plain launch "
                               "of each attention kernel (instruments/tools/stall_probe.py)",
                       "log": a.log, "rows": rows}, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    for r in rows:
        print(f"{r['variant']:12s} {r['clk_per_block']:6.0f} clk/block  tensor {r['tensor_math_pct']:4.1f} %"
              f"  {r['ledger']['clk_per_block']}")
    return 0


def run_sweep() -> int:
    """fa3 once at each shape of the attention sweep: for Nsight Compute's cycles
    at the shapes the fidelity table's `--all` predicts."""
    return _run_fa3(SWEEP)


def _run_fa3(shapes) -> int:
    """fa3 once at each (B, H, S, d) of `shapes` (non-causal fp16), each checked against torch's
    SDPA afterwards."""
    import torch

    from kernels.attention import attention

    torch.manual_seed(0)
    bad = 0
    for i, (B, H, S, D) in enumerate(shapes):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        out = attention(q, k, v, variant="fa3")
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v).float()
        err = ((out.float() - ref).norm() / ref.norm()).item()
        torch.cuda.synchronize()
        bad += not err < 1e-2
        print(f"launch {i} fa3 B{B} H{H} S{S} d{D} rel_err {err:.1e} {'ok' if err < 1e-2 else 'BAD'}",
              flush=True)
    return 1 if bad else 0


def _fa3_row(shape: tuple, m: dict) -> dict:
    """One launch of fa3 at `shape` with its metrics `m`, and its cycles per BM × BN block of
    fa3's tile at that head dim, on the busiest SM."""
    from kernels.attention import config

    B, H, S, D = shape
    cfg = config("fa3", D)
    blocks = B * H * -(-S // cfg.BM) * -(-S // cfg.BN) / 132   # BM × BN blocks per SM
    return {"variant": "fa3", "B": B, "H": H, "S": S, "d": D, **m, "BM": cfg.BM, "BN": cfg.BN,
            "clk_per_block": m["cycles_max"] / blocks}


DIMS = [(4, 32, 8448, 64), (4, 8, 8448, 256)]   # fa3 at d 64 and d 256 beside the headline's d 128


def run_dims() -> int:
    """fa3 once at d 64 and at d 256 (tab. 2's B and S, heads for the same work): for the full
    set and the ledger, as `run` gives for d 128 (`results/h200-stall-dims.json`)."""
    return _run_fa3(DIMS)


def parse_dims(raw: Path, source: Path) -> list[dict]:
    """`run_dims`'s launches -> cycles per BM × BN block and the consumer ledger of each."""
    from kernels.attention import config

    launches, sass = _raw_rows(raw), _sources(source)
    if len(launches) != len(DIMS) or len(sass) != len(DIMS):
        raise ValueError(f"{len(launches)} / {len(sass)} launches, expected {len(DIMS)}")
    out = []
    for shape, (_, m), (_, lines) in zip(DIMS, launches, sass):
        row = _fa3_row(shape, m)
        row["ledger"] = ledger(lines, int(m["threads"]) // 32, row["clk_per_block"],
                               4 * config("fa3", shape[3]).consumers)
        out.append(row)
    return out


def parse_sweep(raw: Path) -> list[dict]:
    """ncu's raw page of `run_sweep` (one row per launch, in order) -> cycles per K/V block
    (BM × BN of fa3's tile at that head dim, one SM)."""
    launches = _raw_rows(raw)
    if len(launches) != len(SWEEP):
        raise ValueError(f"{raw.name}: {len(launches)} launches, expected {len(SWEEP)}")
    return [_fa3_row(shape, m) for shape, (_, m) in zip(SWEEP, launches)]


if __name__ == "__main__":
    sys.exit(main())
