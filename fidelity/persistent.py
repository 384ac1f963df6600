"""Persistent fa3, the model against the machine — `python -m fidelity persistent [--file F]`.

`results/h200-attention-persistent.json` holds our fa3 plain (one CTA per Q tile) and persistent
(one CTA per SM over a tile list, `kernels/attention/persistent.py`), measured in the same
interleaved rounds across the grid
(d ∈ {64, 128, 256} × S ∈ {1K, 4K, 16K}, B·S = 16K, H·d = 2048, causal and not) and tab. 2's shape.
Here the model predicts both at the kernel's tile (`AttentionConfig(persistent=True)`,
`sim/attention/persistent.py`: the kernel's roles and tile order) and sets the persistent gain it
predicts beside the measured one.

That file's causal rows ran the tiles round-robin over FA3's L2 sections of heads (the section
order, which `section_tiles_of` builds); the model walks the zigzag order the kernel has now.
Against that file's causal rows the model's persistent column is the zigzag's, not what ran;
`--section-order` sets them beside the model in the order they ran.
"""
from __future__ import annotations

import argparse
import functools
import json
import statistics
from dataclasses import dataclass, replace

from records import RESULTS
from sim import predict
from sim.config import AttentionConfig
from sim.hardware import get as get_hardware

from .grid import HEAD_DIMS, SEQLENS, config, kernel_tile

SECTION_ORDER_FILE = "h200-attention-persistent.json"     # causal rows in the section order
TAB2 = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}


@dataclass
class Point:
    d: int
    S: int
    causal: bool
    plain: float | None         # measured TFLOP/s, fa3+plain
    persistent: float | None    # measured, fa3+persistent
    model_plain: float
    model_persistent: float

    @property
    def label(self) -> str:
        shape = "tab. 2" if self.S == 8448 else f"d {self.d} S {self.S // 1024}K"
        return f"{shape} {'causal' if self.causal else 'full'}"

    def error(self, which: str) -> float | None:
        m = getattr(self, which)
        return None if not m else getattr(self, f"model_{which}") / m - 1

    @property
    def gain(self) -> float | None:
        return self.persistent / self.plain if self.plain and self.persistent else None

    @property
    def model_gain(self) -> float:
        return self.model_persistent / self.model_plain


def shapes() -> list[tuple[AttentionConfig, int, int, bool]]:
    """(config at the kernel's tile, d, S, causal) of every point: the grid, then tab. 2."""
    out = []
    for causal in (False, True):
        for d in HEAD_DIMS:
            for S in SEQLENS:
                out.append((config(d, S, causal, kernel_tile(d, causal)), d, S, causal))
    for causal in (False, True):
        bm, bn, c = kernel_tile(128, causal)
        out.append((AttentionConfig(**TAB2, causal=causal, variant="fa3", block_m=bm,
                                    block_n=bn, consumers=c), 128, 8448, causal))
    return out


def measured(path) -> dict:
    """(variant, d, S, causal) -> TFLOP/s of each row that passed its check."""
    if not path.exists():
        return {}
    rows = json.loads(path.read_text())["attention"]["rows"]
    return {(r["variant"], r["d"], r["S"], r["causal"]): r["tflops"] for r in rows if r.get("ok")}


L2_KV_BYTES = 32 * 1024 * 1024     # the sections: heads whose K and V fit (FA3's size_l2)


def section_tiles_of(cfg: AttentionConfig, hw) -> list[list[tuple[int, int]]]:
    """The section order (CTAs round-robin over the tiles): sections of heads whose K + V fit
    32 MiB, in each the longest Q tiles first across the section's heads. Non-causal: the
    kernel's order."""
    from sim.attention import persistent as p
    if not cfg.causal:
        return p.tiles_of(cfg, hw)
    n_m, heads, tiles = p.tile_count(cfg)
    group = max(L2_KV_BYTES // (cfg.seqlen * 4 * cfg.headdim), 1)
    P = p.ctas(cfg, hw)

    def coords(t):
        section, local = divmod(t, group * n_m)
        g = min(group, heads - section * group)
        r = local // g
        return n_m - 1 - r

    return [[p.num_blocks(coords(t), cfg) for t in range(c, tiles, P)] for c in range(P)]


def section_order_causal(hardware: str = "h200") -> list[tuple[str, float, float, float]]:
    """(shape, measured persistent, model in the section order, model in the zigzag) for the
    causal rows of SECTION_ORDER_FILE: does the model lose what the machine lost to that order?"""
    from sim.predict import predict_attention_persistent
    hw = get_hardware(hardware)
    got = measured(RESULTS / SECTION_ORDER_FILE)
    out = []
    for cfg, d, S, causal in shapes():
        if causal and ("fa3+persistent", d, S, True) in got:
            pc = replace(cfg, persistent=True)
            out.append((Point(d, S, True, None, None, 0, 0).label, got[("fa3+persistent", d, S, True)],
                        predict_attention_persistent(pc, hw, tiles_of=section_tiles_of).tflops,
                        predict(pc, hw).tflops))
    return out


@functools.cache
def points(file: str = SECTION_ORDER_FILE, hardware: str = "h200") -> tuple[Point, ...]:
    hw = get_hardware(hardware)
    got = measured(RESULTS / file)
    out = []
    for cfg, d, S, causal in shapes():
        out.append(Point(d, S, causal, got.get(("fa3+plain", d, S, causal)),
                         got.get(("fa3+persistent", d, S, causal)),
                         predict(cfg, hw).tflops, predict(replace(cfg, persistent=True), hw).tflops))
    return tuple(out)


def summary(pts, which: str = "persistent") -> dict:
    errs = [abs(p.error(which)) for p in pts if p.error(which) is not None]
    if not errs:
        return {"points": 0}
    return {"points": len(errs), "median_abs_error": statistics.median(errs),
            "max_abs_error": max(errs), "within_10pct": sum(e <= 0.10 for e in errs)}


def table(pts) -> str:
    def f(x, fmt="5.0f"):
        return format(x, fmt) if x else "    -"

    head = (f"{'shape':22s} {'plain':>5s} {'pers':>5s} {'gain':>5s} | {'model':>5s} {'pers':>5s} "
            f"{'gain':>5s} | {'err plain':>9s} {'err pers':>8s}")
    lines = [head]
    for p in pts:
        ep, eq = p.error("plain"), p.error("persistent")
        lines.append(
            f"{p.label:22s} {f(p.plain)} {f(p.persistent)} {f(p.gain, '5.2f')} | "
            f"{p.model_plain:5.0f} {p.model_persistent:5.0f} {p.model_gain:5.2f} | "
            f"{'' if ep is None else format(ep, '+9.1%'):>9s} "
            f"{'' if eq is None else format(eq, '+8.1%'):>8s}")
    lines.append("(measured: our H200, fa3 plain and persistent in the same rounds, TFLOP/s; "
                 "model: h200 preset at the kernel's tile, persistent in the kernel's tile order)")
    for which in ("plain", "persistent"):
        s = summary(pts, which)
        if s["points"]:
            lines.append(f"{which}: {s['within_10pct']} of {s['points']} within ±10 %; median "
                         f"|error| {s['median_abs_error']:.1%}, max {s['max_abs_error']:.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fidelity persistent", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", default=SECTION_ORDER_FILE,
                    help=f"results file under results/ (default {SECTION_ORDER_FILE})")
    ap.add_argument("--hardware", default="h200")
    ap.add_argument("--section-order", action="store_true",
                    help=f"{SECTION_ORDER_FILE}'s causal rows beside the model in the section "
                         "order they ran")
    a = ap.parse_args(argv)
    if a.section_order:
        print(f"{'shape':22s} {'meas.':>5s} {'model, sections':>16s} {'err':>6s} "
              f"{'model, zigzag':>13s}")
        for label, m, old, zig in section_order_causal(a.hardware):
            print(f"{label:22s} {m:5.0f} {old:16.0f} {old / m - 1:+6.1%} {zig:13.0f}")
        return 0
    print(table(points(a.file, a.hardware)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
