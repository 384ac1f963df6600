"""What the FlashAttention-3 paper measured (arXiv 2407.08608, H100 SXM5), and how close the model
comes on the `h100` preset. `python -m sim paper` prints the table; tests/model/test_paper.py
holds the model to it.

How we read the paper (each mapping checked against the text):
* tab. 2 (B 4, H 16, S 8448, d 128, fp16, non-causal): FA3 661 = `fa3`; "no GEMM-softmax
  pipelining, with WS" 582 = `ws_pingpong` (FA3 keeps its scheduler barriers with the intra-
  warpgroup overlap off); "GEMM-softmax pipelining, no WS" 570 = `overlap`.
* §3.1: pingpong raises FP16 forward from about 570 to 620-640 at d 128, S 8K — we take it as
  `ws` → `ws_pingpong` at fig. 5's shape for S 8K (B·S = 16K, so B 2, H 16). Note the paper's two
  figures for `ws_pingpong` (582 at S 8448, 620-640 at S 8192) differ by 7-10% for nearly the same
  problem; no single model can sit within 5% of both. We report both and hold the model to tab. 2.
* FA2 reaches about 35% of the H100's peak (FA3 §1); we check 35 ± 5 points at the tab. 2 shape.
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import AttentionConfig
from .hardware import Hardware
from .predict import predict

TAB2 = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}
TAB2_REPORTED = {"fa3": 661, "ws_pingpong": 582, "overlap": 570}   # TFLOP/s, FA3 tab. 2
SEC31 = {"batch": 2, "heads": 16, "seqlen": 8192, "headdim": 128}
FA2_OF_PEAK = 0.35      # FA3 §1: FlashAttention-2 reaches only about 35 % of the H100's peak
SEC31_REPORTED = {"ws": (570, 570), "ws_pingpong": (620, 640)}      # TFLOP/s, FA3 §3.1
TOLERANCE = 0.05


@dataclass
class Check:
    name: str
    model: float
    low: float          # the paper's figure (or range), as the model must meet it
    high: float
    unit: str = "TFLOPs/s"
    tolerance: float = TOLERANCE
    source: str = ""

    @property
    def error(self) -> float:
        """Relative distance to the nearest end of the paper's range (0 inside it)."""
        if self.model < self.low:
            return self.model / self.low - 1
        if self.model > self.high:
            return self.model / self.high - 1
        return 0.0

    @property
    def ok(self) -> bool:
        return abs(self.error) <= self.tolerance


def _tf(hw: Hardware, variant: str, shape: dict) -> float:
    return predict(AttentionConfig(variant=variant, **shape), hw).tflops


def checks(hw: Hardware) -> list[Check]:
    t = {v: _tf(hw, v, TAB2) for v in ("sequential", "fa2", "pipelined", "ws", "ws_pingpong",
                                       "overlap", "fa3", "overlap3")}
    s = {v: _tf(hw, v, SEC31) for v in ("ws", "ws_pingpong")}
    fa2_pct = 100 * t["fa2"] / hw.peak_tflops
    out = [
        *(Check(f"{v}, tab. 2", t[v], r, r, source="FA3 tab. 2") for v, r in TAB2_REPORTED.items()),
        *(Check(f"{v}, S 8K", s[v], lo, hi, source="FA3 §3.1")
          for v, (lo, hi) in SEC31_REPORTED.items()),
        Check("fa2, % of peak", fa2_pct, 100 * FA2_OF_PEAK, 100 * FA2_OF_PEAK, unit="%",
              tolerance=0.05 / FA2_OF_PEAK, source="FA3 §1"),
    ]
    order = [("sequential", "pipelined"), ("pipelined", "ws"), ("ws", "ws_pingpong"),
             ("ws_pingpong", "fa3"), ("overlap", "fa3"), ("pipelined", "overlap"),
             ("fa2", "fa3"), ("overlap3", "fa3")]
    for lo, hi in order:
        gain = t[hi] / t[lo] - 1
        out.append(Check(f"{lo} < {hi}", gain, 1e-9, float("inf"), unit="gain", tolerance=0.0,
                         source="FA3 §3-4 ordering"))
    return out


def table(rows: list[Check]) -> str:
    lines = [f"{'check':24s} {'model':>9s} {'paper':>11s} {'error':>7s}  ok   source"]
    for c in rows:
        if c.unit == "gain":
            lines.append(f"{c.name:24s} {c.model:+8.1%} {'> 0':>11s} {'':>7s}  "
                         f"{'yes' if c.ok else 'NO ':3s}  {c.source}")
            continue
        paper = f"{c.low:g}" if c.low == c.high else f"{c.low:g}-{c.high:g}"
        lines.append(f"{c.name:24s} {c.model:9.1f} {paper:>11s} {c.error:+7.1%}  "
                     f"{'yes' if c.ok else 'NO ':3s}  {c.source}")
    return "\n".join(lines)
