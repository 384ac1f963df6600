"""Nsight Compute's source page read back: each profiled launch's SASS, one line per
instruction with its execution count and its PC samples per stall reason.

``instruments/tools/stall_probe.py`` has ncu write the page (``--page source --csv
--print-source sass``); the runs' pages are committed gzipped under ``results/logs/``. The PC
sampler picks one resident warp of an SM sub-partition at a fixed interval, so a warp's share
of the samples is its share of the time: clocks a warp spends at an instruction, per K/V block,
are its samples / (all samples / warps per CTA) × clocks per block.

A warp-specialized kernel has one copy of its consumer loop per partition (the default
partition's and each worker's), each run once a block by its own warps: `loops` finds them as
the runs of instructions executed exactly the loop's count of times.
Plain Python: no GPU.
"""
from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from pathlib import Path

from . import RESULTS


@dataclass(frozen=True)
class Line:
    index: int                 # position in the launch's SASS listing
    source: str                # the instruction as ncu prints it
    executed: float            # warp-level executions over the launch
    samples: float             # PC samples at this instruction, all reasons
    stalls: dict               # samples per stall reason ("barrier", "wait", ...)

    @property
    def opcode(self) -> str:
        """The instruction's opcode with its modifiers (``HGMMA.64x64x16.F32``); a guard
        predicate in front of it (``@!Pn``) is dropped."""
        words = self.source.split()
        if not words:
            return ""
        return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]


def _num(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_source(path: Path) -> list[tuple[str, list[Line]]]:
    """Each launch on ncu's source page (plain or ``.gz``), in launch order: (kernel name, its
    SASS lines)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(f))
    launches: list[tuple[str, list[Line]]] = []
    header = None
    for row in rows:
        if row and row[0] == "Kernel Name":
            launches.append((row[1], []))
            header = None
        elif row and row[0] == "Address":
            header = row
        elif launches and header and row:
            d = dict(zip(header, row))
            launches[-1][1].append(Line(
                index=len(launches[-1][1]), source=d["Source"].strip(),
                executed=_num(d["Instructions Executed"]),
                samples=_num(d["Warp Stall Sampling (All Samples)"]),
                stalls={h[6:]: _num(d[h]) for h in header
                        if h.startswith("stall_") and "Not Issued" not in h and _num(d[h])}))
    if not launches:
        raise ValueError(f"{path}: no 'Kernel Name' rows — not an ncu source page")
    return launches


# Instructions between two partitions' copies of the loop (each copy's prologue and epilogue):
# ~900-1500 in fa3's builds; within a copy, a side path off the loop's count (the masked
# block's selects) is ~40-90 instructions long.
PARTITION_GAP = 256


def loops(lines: list[Line]) -> list[list[Line]]:
    """The consumer loops: the instructions executed the loop's count of times (the count that
    holds the most samples), one list per partition in address order — a new partition where
    more than `PARTITION_GAP` instructions lie between two of them."""
    by_count: dict[float, float] = {}
    for ln in lines:
        by_count[ln.executed] = by_count.get(ln.executed, 0.0) + ln.samples
    count = max(by_count, key=by_count.get)
    runs: list[list[Line]] = []
    for ln in lines:
        if ln.executed != count:
            continue
        if runs and ln.index - runs[-1][-1].index <= PARTITION_GAP:
            runs[-1].append(ln)
        else:
            runs.append([ln])
    return runs


def clk_scale(lines: list[Line], warps: int, clk_per_block: float) -> float:
    """Clocks per block one warp spends per PC sample."""
    total = sum(ln.samples for ln in lines)
    if total <= 0 or warps < 1:
        raise ValueError(f"no samples ({total}) or no warps ({warps})")
    return clk_per_block / (total / warps)


def log(name: str) -> Path:
    """A committed source page under results/logs/."""
    path = RESULTS / "logs" / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: not committed")
    return path
