"""Does the model predict what it was not fitted to? `python -m fidelity crossval [--all] [--readme]`.

`python -m fidelity` puts the headline kernels within ±10 % of what they measured, but some of
the `h200` preset's constants were fitted to measurements of those same kernels. This module
holds each kernel *family* out in turn, refits those constants without it, and predicts it.

**What is fitted, and to what** (`fidelity.calibrate`; everything else in `sim/hardware.py` is a
datasheet figure or one measurement, named beside it):

* the power cap's plane (`PowerCap`, four coefficients): a least-squares fit to the clocks
  measured under load — the wgmma stream (a microbenchmark: no family's) and each traced kernel
  with its time (`calibrate.clock_points`, tagged with the traced kernel's workload, variant and
  head dim); with ``--bounded``, held to reach the ceiling at the L2 and exp2 streams that ran
  there (`calibrate.ceiling_points`: bounds of no family, kept in every refit), and the
  in-sample preset is `h200` with that plane;
* `softmax_stall_per_elem` and `softmax_beside_mma`: the `--softmax` grid's best for the six
  plain attention kernels' cycles per K/V block (`calibrate.fit_h200_softmax`, d 128);
* `tma_misaligned_factor`: the `--align` grid's best for the alignment probe's GEMM pairs
  (`calibrate.fit_h200_alignment`). No headline row is misaligned, so it moves no prediction
  here; it is refitted all the same.

(The `h100` preset is the same die: it takes these constants, and fits three of its own to FA3
tab. 2 — the power cap's static term and FA3's softmax pair. ``--tab2`` cross-validates those:
each of tab. 2's three kernels predicted from a fit to the other two.)

**Families** are read off the measured rows `fidelity.compare` predicts: the GEMM ladder (every
GEMM row), each attention variant, each head dim — an attention row belongs to two. A fit
target belongs to the families of the kernel it measured (a cycle row, a traced clock, an
alignment pair); the wgmma stream to none.

**Leave one family out**: drop every fit target of the family, refit with calibrate's own
procedure, and predict the family's rows on the `h200` preset with the refitted constants. A
fit whose targets the family leaves whole is not rerun: its constants stay the preset's (which is
that fit: tests/fidelity/test_power_cap.py and test_crossval.py hold them to it). A fit left with
no targets falls back to the prior the `h200` preset sits on (`H200_DATASHEET`: for the softmax,
tab. 2's fit on datasheet constants alone, none of our measurements in it; no misaligned-copy
penalty). In-sample is the preset itself — the error
`python -m fidelity` prints. A row's held-out error, over all rows, is its worst over the
families that hold it out.

Deterministic: the fits are least squares and grids (the first of equal scores wins), the model
is a discrete-event simulation; predictions run on the CPU's cores, whose order does not matter.
"""
from __future__ import annotations

import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path

from sim import attention
from sim.config import AttentionConfig, GemmConfig
from sim.hardware import H200, H200_DATASHEET, Hardware
from sim.predict import predict

from . import calibrate
from .compare import Row, compare

README = Path(__file__).with_name("README.md")
BEGIN, END = "<!-- crossval: python -m fidelity crossval --readme writes this -->", "<!-- /crossval -->"
GEMM = "GEMM ladder"
# The fitted constants, grouped by the fit that sets them.
SOFTMAX = ("softmax_stall_per_elem", "softmax_beside_mma")
ALIGN = ("tma_misaligned_factor",)


def families_of(workload: str, variant: str, headdim: int | None) -> tuple[str, ...]:
    """The families a kernel belongs to; the wgmma stream (workload "micro") to none."""
    if workload == "gemm":
        return (GEMM,)
    if workload == "attention":
        return (f"attention {variant}", f"head dim {headdim}")
    return ()


def row_families(row: Row) -> tuple[str, ...]:
    """A measured row's (or a cycle row's) families, from the configuration the model ran."""
    cfg = row.config
    if isinstance(cfg, GemmConfig):
        return families_of("gemm", cfg.variant, None)
    if isinstance(cfg, AttentionConfig):
        return families_of("attention", cfg.variant, cfg.headdim)
    return ()


def _order(name: str) -> tuple:
    """GEMM first, then the attention variants in the ladder's order, then the head dims."""
    if name == GEMM:
        return (0, 0)
    kind, value = name.rsplit(" ", 1)
    if kind == "attention":
        return (1, list(attention.VARIANTS).index(value))
    return (2, int(value))


# --- the refit --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Targets:
    """How many of each fit's targets a family leaves in (of how many)."""
    clocks: tuple[int, int]
    cycles: tuple[int, int]
    align: tuple[int, int]


def refit(family: str | None, bounded: bool = False) -> tuple[dict, Targets]:
    """The fitted constants with `family`'s targets dropped (None: none dropped), and what was
    left to fit them to (`bounded`: the power cap held to the clock streams' ceiling). Only the
    constants a fit set anew are returned; the rest are the preset's."""
    out: dict = {}
    points = calibrate.clock_points()
    kept = [p for p in points if family not in families_of(p.workload, p.variant, p.headdim)]
    if len(kept) < len(points):
        out["power_cap"] = calibrate.power_cap_fit(kept, bounded=bounded)[0]

    rows = calibrate.softmax_cycle_rows(())
    cycles = sum(family not in row_families(r) for r in rows)
    if cycles == 0:
        out.update({c: getattr(H200_DATASHEET, c) for c in SOFTMAX})
    elif cycles < len(rows):
        out.update(calibrate.fit_h200_softmax(lambda r: family not in row_families(r), echo=False))

    pairs = calibrate.alignment_pairs()
    aligned = [p for p in pairs if family not in families_of("gemm", p[1], None)]
    if not aligned:
        out.update({c: getattr(H200_DATASHEET, c) for c in ALIGN})
    elif len(aligned) < len(pairs):
        out.update(calibrate.fit_h200_alignment(aligned, echo=False))
    return out, Targets((len(kept), len(points)), (cycles, len(rows)), (len(aligned), len(pairs)))


def moved(constants: dict, preset: Hardware = H200) -> str:
    """What the refit changed, against the preset: the power cap's coefficients in per cent, a
    grid's constants as old → new."""
    parts = []
    for name, new in constants.items():
        old = getattr(preset, name)
        if name == "power_cap":
            short = {"base_ns": "base", "tensor_ns": "tensor", "l2_ns_per_byte": "L2",
                     "exp_ns": "exp"}
            parts.append("cap " + " ".join(
                f"{short[f.name]} {getattr(new, f.name) / getattr(old, f.name) - 1:+.0%}"
                for f in fields(new)))
        elif new != old:
            parts.append(f"{name.removeprefix('softmax_').removeprefix('tma_')} {old:g}→{new:g}")
    return "; ".join(parts) or "—"


# --- predictions --------------------------------------------------------------------------------

def _tflops(job: tuple) -> float | None:
    cfg, hw = job
    try:
        return predict(cfg, hw).tflops
    except ValueError:
        return None


class _Predictions:
    """Each (configuration, hardware) predicted once, on `workers` processes (1: in this one);
    `submit` returns at once, so the fits run here while the preset's predictions run there."""

    def __init__(self, workers: int):
        self.pool = ProcessPoolExecutor(workers) if workers > 1 else None
        self.futures: dict = {}

    def submit(self, jobs) -> None:
        for job in jobs:
            if job not in self.futures:
                self.futures[job] = (self.pool.submit(_tflops, job) if self.pool
                                     else _Done(_tflops(job)))

    def __getitem__(self, job) -> float | None:
        return self.futures[job].result()

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown()


@dataclass
class _Done:
    value: float | None

    def result(self) -> float | None:
        return self.value


# --- the cross-validation ---------------------------------------------------------------------

@dataclass
class Family:
    name: str
    rows: list[Row]
    in_sample: list[float]      # each row's error on the preset
    held_out: list[float]       # each row's error with the family's targets out of the fits
    constants: dict             # what the refit set
    targets: Targets

    @staticmethod
    def _stats(errs: list[float]) -> tuple[float, float]:
        a = [abs(e) for e in errs]
        return statistics.median(a), max(a)

    @property
    def in_sample_stats(self) -> tuple[float, float]:
        return self._stats(self.in_sample)

    @property
    def held_out_stats(self) -> tuple[float, float]:
        return self._stats(self.held_out)


@dataclass
class CrossVal:
    families: list[Family]
    rows: list[Row]
    in_sample: list[float]      # each row's error on the preset
    held_out: list[float]       # each row's worst held-out error over its families
    preset: Hardware = H200     # what in-sample is, and what the refits are against


def preset(bounded: bool = False) -> Hardware:
    """The in-sample preset: `h200`, or with `bounded` `h200` with the power cap held to the
    clock streams' ceiling (`calibrate.power_cap_fit(bounded=True)`)."""
    return H200.with_(power_cap=calibrate.power_cap_fit(bounded=True)[0]) if bounded else H200


def crossval(everything: bool = False, workers: int | None = None,
             bounded: bool = False) -> CrossVal:
    """Hold out each family of `compare`'s measured rows (the headlines, or with `everything` all)
    in turn; `workers` processes predict (default: every core); `bounded`: the power cap held
    to the clock streams' ceiling, in-sample and in every refit."""
    workers = workers or os.cpu_count() or 1
    rows = [r for r in compare(None, everything) if r.config is not None]
    names = sorted({f for r in rows for f in row_families(r)}, key=_order)
    base = preset(bounded)
    tflops = _Predictions(workers)
    try:
        tflops.submit((r.config, base) for r in rows)
        fits = {n: refit(n, bounded) for n in names}
        hws = {n: base.with_(**fits[n][0]) for n in names}
        tflops.submit((r.config, hws[n]) for n in names for r in rows if n in row_families(r))
        return _assemble(rows, names, fits, hws, tflops, base)
    finally:
        tflops.close()


def _assemble(rows, names, fits, hws, tflops, base: Hardware = H200) -> CrossVal:
    def err(row, hw):
        t = tflops[(row.config, hw)]
        return float("nan") if t is None else t / row.measured - 1

    fams = [Family(n, [r for r in rows if n in row_families(r)],
                   [err(r, base) for r in rows if n in row_families(r)],
                   [err(r, hws[n]) for r in rows if n in row_families(r)], *fits[n])
            for n in names]
    worst = [max((err(r, hws[n]) for n in row_families(r)), key=abs) for r in rows]
    return CrossVal(fams, rows, [err(r, base) for r in rows], worst, base)


def table(cv: CrossVal) -> str:
    lines = [(f"{'family':22s} {'rows':>4s}  {'in-sample':>13s}  {'held out':>13s}  "
              f"{'fit targets left':>19s}  refitted (against the h200 preset)"),
             (f"{'':22s} {'':>4s}  {'median':>6s} {'max':>6s}  {'median':>6s} {'max':>6s}  "
              f"{'clocks':>6s} {'cycles':>6s} {'align':>5s}")]
    for f in cv.families:
        (im, ix), (hm, hx), t = f.in_sample_stats, f.held_out_stats, f.targets
        lines.append(f"{f.name:22s} {len(f.rows):4d}  {im:6.1%} {ix:6.1%}  {hm:6.1%} {hx:6.1%}  "
                     f"{t.clocks[0]:>3d}/{t.clocks[1]:<2d} {t.cycles[0]:>3d}/{t.cycles[1]:<2d} "
                     f"{t.align[0]:>2d}/{t.align[1]:<2d}  {moved(f.constants, cv.preset)}")
    ins = [abs(e) for e in cv.in_sample]
    out = [abs(e) for e in cv.held_out]
    lines.append(f"\nall {len(cv.rows)} rows: in-sample median |error| {statistics.median(ins):.1%}, "
                 f"max {max(ins):.1%}; held out (each row at its worst family) median "
                 f"{statistics.median(out):.1%}, max {max(out):.1%}; "
                 f"{sum(e <= 0.10 for e in out)} of {len(out)} within ±10%")
    return "\n".join(lines)


def row_table(cv: CrossVal) -> str:
    """Each row: measured, its in-sample error and its error with each of its families held out."""
    lines = [f"{'kernel':26s} {'shape':24s} {'measured':>8s} {'in-sample':>9s}  held out"]
    for i, r in enumerate(cv.rows):
        held = "  ".join(f"{f.name} {f.held_out[f.rows.index(r)]:+.1%}" for f in cv.families
                         if r in f.rows)
        lines.append(f"{r.label:26s} {r.shape:24s} {r.measured:8.0f} {cv.in_sample[i]:+9.1%}  "
                     f"{held}")
    return "\n".join(lines)


def readme_block(cv: CrossVal) -> str:
    return f"{BEGIN}\n```\n$ python -m fidelity crossval\n{table(cv)}\n```\n{END}"


def readme_table(text: str) -> str | None:
    """The generated block in fidelity/README.md's text (None if it has none)."""
    if BEGIN not in text or END not in text:
        return None
    return text[text.index(BEGIN):text.index(END) + len(END)]


def write_readme(cv: CrossVal, path: Path = README) -> None:
    text = path.read_text()
    old = readme_table(text)
    if old is None:
        raise ValueError(f"{path}: no {BEGIN} … {END} block to write")
    path.write_text(text.replace(old, readme_block(cv)))


def tab2_table() -> str:
    """`h100`'s three tab. 2 constants, each kernel of tab. 2 held out in turn."""
    lines = [f"{'held out':12s} {'fitted to the other two':58s} {'held-out error':>14s}"]
    for v, (fit, err) in calibrate.tab2_held_out().items():
        shown = ", ".join(f"{k.removeprefix('softmax_')} {x:g}" for k, x in fit.items())
        lines.append(f"{v:12s} {shown:58s} {err:+14.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    unknown = set(argv) - {"--all", "--readme", "--rows", "--tab2", "--bounded"}
    if unknown:
        print("usage: python -m fidelity crossval [--all] [--rows] [--bounded] [--readme] | --tab2; "
              f"unknown {sorted(unknown)}", file=sys.stderr)
        return 2
    if "--tab2" in argv:
        print(tab2_table())
        return 0
    if "--readme" in argv and ("--all" in argv or "--bounded" in argv):
        print("--readme writes the headline table on the preset only", file=sys.stderr)
        return 2
    cv = crossval(everything="--all" in argv, bounded="--bounded" in argv)
    print(table(cv))
    if "--rows" in argv:
        print("\n" + row_table(cv))
    if "--readme" in argv:
        write_readme(cv)
        print(f"\nwritten to {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
