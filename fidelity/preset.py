"""The `h200` preset against the measurements it was taken from.

`sim.hardware` writes the H200's measured constants as literals, so the model reads no file. This
module rebuilds them from `results/h200-micro.json` — the microbenchmarks' "constants" and the L2
latency rows whose slope is one SM's TMA link rate — so a test can hold the literals to the file.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from records import RESULTS
from sim.hardware import H200_DATASHEET, H200_MEASURED, Hardware

MICRO = RESULTS / "h200-micro.json"
# What a microbenchmark may set, and the field it sets.
MEASURED_FIELDS = {
    "clock_hz_under_load": "clock_hz", "tensor_flop_per_clk": "tensor_flop_per_clk",
    "wgmma_latency_clk": "wgmma_latency_clk", "sfu_exp_per_clk": "sfu_exp_per_clk",
    "fma_lanes_per_clk": "fma_lanes_per_clk", "tma_latency_clk": "tma_latency_clk",
    "l2_bytes_per_clk_per_sm": "l2_bytes_per_clk_per_sm", "mbarrier_clk": "mbarrier_clk",
}
# Measured, and deliberately not taken, each with the evidence against using it as the model's
# constant.
NOT_TAKEN = {
    # The TMA bandwidth microbenchmark (every SM streaming its own 16 KiB boxes from a 16 MiB
    # buffer) saturates at 36 B/clk/SM at 1.98 GHz, 9.2 TB/s; our 128x128 pingpong GEMM pulled
    # 10.4 TB/s at 1.34 GHz. L2 bandwidth is per second, not per SM clock: `l2_bytes_per_s`.
    "l2_bytes_per_clk_per_sm": "a per-clock floor at 1.98 GHz; the model's L2 rate is per "
                               "second (l2_bytes_per_s), from the pingpong GEMM trace",
}


def with_measurements(base: Hardware, path: Path, name: str) -> Hardware:
    """`base` with the constants a microbenchmark run measured (the file's "micro"/"constants");
    `base` unchanged, renamed, if the file does not exist."""
    if not path.exists():
        return replace(base, name=name)
    constants = json.loads(path.read_text())["micro"]["constants"]
    unknown = set(constants) - set(MEASURED_FIELDS)
    if unknown:
        raise ValueError(f"{path.name}: unknown measured constants {sorted(unknown)}; "
                         f"expected some of {sorted(MEASURED_FIELDS)}")
    taken = {MEASURED_FIELDS[k]: float(v) for k, v in constants.items() if k not in NOT_TAKEN}
    return replace(base, name=name, **taken)


def tma_link_rate(path: Path) -> float | None:
    """Bytes per SM clock of one SM's copies with L2 idle: the slope of the L2 latency
    microbenchmark's median latency against box bytes (least squares; its intercept is
    ``tma_latency_clk``). None if the file or its rows are missing."""
    if not path.exists():
        return None
    rows = [r for r in json.loads(path.read_text())["micro"]["rows"]
            if r.get("bench") == "tma_latency" and r.get("mode") == "l2" and r.get("ok")]
    if len(rows) < 2:
        return None
    xs, ys = [r["box_bytes"] for r in rows], [r["latency_clk_median"] for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return 1.0 / slope


def measured_h200(path: Path = MICRO) -> Hardware:
    """The h200 preset as the committed measurements give it."""
    return with_measurements(H200_DATASHEET, path, "h200").with_(
        **H200_MEASURED, tma_link_bytes_per_clk=tma_link_rate(path))
