"""Launch each kernel of the model's fidelity table once, in a fixed order, for Nsight Compute:
where each kernel's TMA loads are served from (L2 hit rate, DRAM bytes) and the SM
clock it held.

    ncu --clock-control none -k regex:'^(sequential|pipelined|ws|ws_pingpong|overlap|fa3)_kernel'
        --metrics ... --csv --page raw --log-file ncu.csv python3 -m instruments.tools.l2_probe
    python3 -m instruments.tools.l2_probe --parse ncu.csv --out l2_probe.json [--log NAME]

The n-th profiled launch is the n-th line of ``CONFIGS``: each configuration is launched exactly
once (its compile happens on the host before the launch), and checked against torch afterwards
(outside the profiled kernels: ncu only profiles the names in its filter). Shapes are the
committed measurements' (8192³ GEMM, attention B 4 H 16 S 8448 d 128).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

CONFIGS = [  # (workload, variant, stages)
    ("gemm", "sequential", 1), ("gemm", "pipelined", 3), ("gemm", "ws", 2), ("gemm", "ws", 3),
    ("gemm", "ws_pingpong", 2), ("gemm", "ws_pingpong", 3), ("gemm", "ws_pingpong", 4),
    ("attention", "sequential", 1), ("attention", "pipelined", 2), ("attention", "ws", 2),
    ("attention", "ws_pingpong", 2), ("attention", "overlap", 2), ("attention", "fa3", 2),
]
WHAT = ("Nsight Compute, one launch of each kernel (instruments/tools/l2_probe.py; instruments/device/session.sh "
        "l2_probe): --clock-control none, default cache control (L2 flushed before each launch), "
        "GEMM 8192^3 fp16, attention B4 H16 S8448 d128 fp16; GPU, driver and versions in the log")
GEMM_SHAPE = (8192, 8192, 8192)
ATTN_SHAPE = (4, 16, 8448, 128)


def run(configs: list[tuple[str, str, int]] = CONFIGS) -> int:
    """Launch each of ``configs`` once, in order, and check it against torch."""
    import torch

    from kernels.attention import attention
    from kernels.gemm import gemm

    torch.manual_seed(0)
    M, N, K = GEMM_SHAPE
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(*ATTN_SHAPE, device="cuda", dtype=torch.float16) for _ in range(3))
    ref_c = (a.float() @ b.float())
    ref_o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    bad = 0
    for i, (workload, variant, stages) in enumerate(configs):
        if workload == "gemm":
            out = gemm(a, b, variant, stages=stages)
            err = ((out.float() - ref_c).norm() / ref_c.norm()).item()
        else:
            out = attention(q, k, v, variant=variant, stages=stages)
            err = ((out.float() - ref_o.float()).norm() / ref_o.float().norm()).item()
        torch.cuda.synchronize()
        ok = err < 1e-2
        bad += not ok
        verdict = "ok" if ok else "BAD"
        print(f"launch {i} {workload} {variant} s{stages} rel_err {err:.1e} {verdict}", flush=True)
    return 1 if bad else 0


def parse(path: Path) -> list[dict]:
    """ncu's raw CSV (one row per profiled launch) -> one dict per CONFIGS line, with the
    metrics asked for (their totals, rates and percentages; not the per-unit avg/min/max nor
    the device and launch attributes ncu adds to every row)."""
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.DictReader(lines[start:]))
    rows = [r for r in rows if r.get("ID", "").isdigit()]     # the units row has no ID
    if len(rows) != len(CONFIGS):
        raise ValueError(f"{path.name}: {len(rows)} profiled launches, expected {len(CONFIGS)}")
    out = []
    for (workload, variant, stages), r in zip(CONFIGS, rows):
        rec = {"workload": workload, "variant": variant, "stages": stages,
               "kernel": r.get("Kernel Name")}
        for key, val in r.items():
            asked = key.endswith((".sum", ".pct", ".avg.per_second"))
            if asked and not key.startswith("profiler__"):            # not ncu's own bookkeeping
                rec[key] = float(val.replace(",", ""))
        out.append(rec)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parse", type=Path, help="ncu's CSV log to turn into JSON")
    p.add_argument("--out", type=Path)
    p.add_argument("--log", default=None, help="where the run's logs are committed")
    args = p.parse_args(argv)
    if not args.parse:
        return run()
    recs = parse(args.parse)
    text = json.dumps({"what": WHAT, "log": args.log, "rows": recs}, indent=1)
    if args.out:
        args.out.write_text(text)
    for r in recs:
        print(r["workload"], r["variant"], f"s{r['stages']}",
              {k: r[k] for k in r if "__" in k})
    return 0


if __name__ == "__main__":
    sys.exit(main())
