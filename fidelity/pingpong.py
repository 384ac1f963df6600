"""Where pingpong pays: the model's gain of `ws_pingpong` over `ws`, mapped, with our H200's
measured pairs on the map and, at every point, *why* from the model's own trace.

`python -m fidelity pingpong [--quick]` prints the map and the table of points.

FA3 §3.1 reports pingpong raising fp16 attention from about 570 to 620-640 TFLOP/s (+9-12 %);
our H200 measured `ws` and `ws_pingpong` level (attention at tab. 2's shape −2.6 % .. +2.0 %,
the GEMM across K −10 % .. +2.6 %). Pingpong can only pay where `ws` leaves the tensor core idle
in a way turns remove, and only keep what it saves if the clock does not give it back. Three
things decide it, and each is read off the model's trace of the steady-state CTA (`decompose`):

* **Collision.** In `ws` nothing orders the two consumers. Where they wake on the same barrier
  and issue Q·Kⱼᵀ together, the tensor core serves the two groups instruction by instruction and
  *both* get their scores late; then both run their softmax at once and the tensor core waits
  for the whole of it. A block is *collided* when its two Q·Kᵀ groups share the tensor core for
  at least half of one group's work; the tensor core's idle time in such blocks beyond what
  `ws_pingpong` leaves per block is the **collision** idle: what turns can remove. Left alone, the
  model's consumers drift into alternation within a few blocks wherever a block's GEMMs are
  short beside its softmax (d 64, d 128), and stay collided where they are long (d 256): the
  collision is then a CTA's start-up cost, worth something at short S only.
* **Softmax not covered.** The idle left in blocks that alternate: one consumer's softmax (its row
  max, exps, rescale and pack, slowed `softmax_beside_mma`-fold beside a busy tensor core) lasts
  longer than the other consumer's GEMMs. Pingpong does not remove it; nothing but a shorter
  softmax or intra-warpgroup overlap (`fa3`) does.
* **The epilogue.** Tensor idle while a consumer converts and stores its output. In attention it
  is one per CTA (at S 8K a CTA walks 64 blocks: ~1 %). In the GEMM it is one per tile, and the
  cooperative `ws` kernel exposes it every tile; pingpong hides it under the other consumer's
  K-loop, at the price of its smaller tile's bytes per FLOP.

And the clock. On the `h200` preset each kernel runs at the clock its activity allows under the
700 W cap (`sim.machine.PowerCap`): cycles pingpong saves keep the tensor cores busier per
second, which lowers the clock. The table gives both the **cycles** gain (the steady CTA's
cycles, `ws` over `ws_pingpong`) and the **clock** change; the TFLOP/s gain is about their
product. The `h100` preset is the same die under the same kind of cap (its static term fitted to
FA3 tab. 2), below FA3's 1830 MHz lock (app. C.1).
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

from sim import attention, gemm
from sim.config import AttentionConfig, GemmConfig
from sim.hardware import H100, H200, Hardware
from sim.predict import EXACT_UP_TO, clocked, predict

from records import RESULTS

PRESETS = (H100, H200)
SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)      # fig. 5's grid: B·S = 16K, H·d = 2048
HEADDIMS = (64, 128, 256)
GEMM_KS = (256, 512, 1024, 2048, 4096, 8192)        # M = N = 8192
GEMM_TILES = ((192, 128), (128, 128))               # pingpong's tile per consumer; ws 128×256
COLLIDED = 0.5          # a block is collided when its Q·Kᵀ groups share the tensor core this long
                        # (a fraction of one group's work)
EPILOGUE_OPS = {"epilogue", "O through smem", "store O", "store C"}
DTYPE = {"float16": "fp16", "bfloat16": "bf16"}


def attention_tile(hw: Hardware, d: int) -> tuple[int, int]:
    """(block_m, block_n) with two consumers: FA3's block_n on `h100` (its d 64 tile has three
    consumers; here BM 128 and two), our Gluon kernels' on the others (`kernels/attention`
    TILES: powers of two)."""
    if hw.name == "h100":
        return 128, {64: 128, 128: 176, 256: 80}[d]
    return 128, {64: 128, 128: 128, 256: 64}[d]


# --- the model's side of one point ----------------------------------------------------------
@dataclass
class Side:
    """One variant at one point: its prediction and its steady CTA's trace at that clock."""
    tflops: float
    clock_hz: float
    cycles: float            # the steady CTA's cycles
    trace: object = field(repr=False)
    work: float = 1.0        # output elements × blocks the steady CTA computes (cycles per work
                             # compare a GEMM's tiles of different shapes)


@dataclass
class Point:
    workload: str
    hardware: str
    shape: str
    tile: str
    ws: Side
    pp: Side
    measured: float | None = None       # the measured gain (pp / ws − 1), where we have one
    label: str = ""
    idle: dict = field(default_factory=dict)     # ws's tensor idle by cause, share of its CTA

    @property
    def gain(self) -> float:
        return self.pp.tflops / self.ws.tflops - 1

    @property
    def cycles_gain(self) -> float:
        """Cycles for the same work, ws over pingpong, − 1."""
        return (self.ws.cycles / self.ws.work) / (self.pp.cycles / self.pp.work) - 1

    @property
    def clock_change(self) -> float:
        return self.pp.clock_hz / self.ws.clock_hz - 1


def _side(cfg, hw: Hardware, prepare, simulate, work: float, *args) -> Side:
    p = predict(cfg, hw)
    c = prepare(cfg, hw)

    def steady(h):
        return simulate(c, h, *args)
    at = clocked(hw, steady)
    clk, trace = steady(at)
    return Side(p.tflops, p.clock_hz, clk, trace, work)


@lru_cache(maxsize=None)
def attention_point(hw: Hardware, seqlen: int, headdim: int, batch: int | None = None,
                    heads: int | None = None, causal: bool = False, stages: int = 2,
                    tile: tuple[int, int] | None = None) -> Point:
    bm, bn = tile or attention_tile(hw, headdim)
    batch = batch or max(1, 16384 // seqlen)
    heads = heads or 2048 // headdim
    sides = {}
    for v in ("ws", "ws_pingpong"):
        cfg = AttentionConfig(variant=v, batch=batch, heads=heads, seqlen=seqlen, headdim=headdim,
                              causal=causal, block_m=bm, block_n=bn, consumers=2, stages=stages)
        n = min(math.ceil(seqlen / bn), EXACT_UP_TO)
        sides[v] = _side(cfg, hw, attention.prepare, attention.simulate, n * bm * bn, n, 0)
    pt = Point("attention", hw.name, f"S {seqlen} d {headdim}" + (" causal" if causal else ""),
               f"{bm}×{bn}", sides["ws"], sides["ws_pingpong"])
    pt.idle = decompose(pt.ws.trace, pt.pp.trace, pt.ws.cycles, attention_blocks=True)
    return pt


@lru_cache(maxsize=None)
def gemm_point(hw: Hardware, m: int, n: int, k: int, tile: tuple[int, int] = (192, 128),
               dtype: str = "fp16") -> Point:
    sides = {}
    for v, (bm, bn) in (("ws", (128, 256)), ("ws_pingpong", tile)):
        cfg = GemmConfig(variant=v, m=m, n=n, k=k, dtype=dtype, block_m=bm, block_n=bn)
        c = gemm.prepare(cfg, hw)
        tiles = min(max(gemm.tiles_per_cta(c, hw)), 2 * c.consumers)
        sides[v] = _side(cfg, hw, gemm.prepare, gemm.simulate, tiles * bm * bn, tiles,
                         math.ceil(k / c.block_k))
    pt = Point("gemm", hw.name, f"{m}×{n}×{k}" + ("" if dtype == "fp16" else f" {dtype}"),
               f"{tile[0]}×{tile[1]}", sides["ws"], sides["ws_pingpong"])
    pt.idle = decompose(pt.ws.trace, pt.pp.trace, pt.ws.cycles, attention_blocks=False)
    return pt


# --- why: the tensor core's idle time in ws, by cause ---------------------------------------
def _union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _overlap(a, b) -> float:
    """Total length of the intersection of two interval unions."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _idle(trace, lo: float, hi: float) -> list[list[float]]:
    """The tensor core's idle stretches inside [lo, hi)."""
    busy = _union([(max(i.start, lo), min(i.end, hi)) for i in trace.intervals
                   if i.unit == "tensor" and i.end > lo and i.start < hi])
    out, cursor = [], lo
    for s, e in busy:
        if s > cursor:
            out.append([cursor, s])
        cursor = max(cursor, e)
    if hi > cursor:
        out.append([cursor, hi])
    return out


def _qk_blocks(trace) -> dict[int, dict[str, tuple[float, float, float]]]:
    """block j → consumer → (first start, last end, work) of its Q·Kᵀ group on the tensor core."""
    out: dict = {}
    for i in trace.intervals:
        if i.unit == "tensor" and i.op == "QKᵀ" and i.actor.startswith("consumer"):
            s, e, w = out.setdefault(i.tile[1], {}).get(i.actor, (math.inf, 0.0, 0.0))
            out[i.tile[1]][i.actor] = (min(s, i.start), max(e, i.end), w + i.work)
    return out


def _per_block_idle(trace) -> tuple[list[float], list[float], list[bool]]:
    """Each K/V block's window (from its first Q·Kᵀ to the next block's), the tensor idle in it,
    and whether its consumers' Q·Kᵀ groups collided."""
    qk = _qk_blocks(trace)
    js = sorted(qk)
    starts = [min(s for s, _, _ in qk[j].values()) for j in js]
    idle, collided = [], []
    for n, j in enumerate(js[:-1]):
        idle.append(sum(e - s for s, e in _idle(trace, starts[n], starts[n + 1])))
        groups = sorted(qk[j].values())
        shared = max((max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
                      for a, b in zip(groups, groups[1:])), default=0.0)
        collided.append(len(groups) > 1 and shared >= COLLIDED * min(g[2] for g in groups))
    return starts, idle, collided


def decompose(ws_trace, pp_trace, ws_cycles: float, attention_blocks: bool) -> dict:
    """`ws`'s tensor idle time by cause, each a share of its steady CTA's cycles:
    `epilogue` (idle while a consumer converts and stores its output), and for attention
    `collision` (in collided blocks, the idle beyond `ws_pingpong`'s median idle per block) and
    `uncovered` (the rest: softmax longer than the other consumer's GEMMs, the start, the waits);
    for the GEMM `other` (waits for data, the issue). `collided` is the share of ws's blocks that
    collided, `pp_epilogue` pingpong's own exposed epilogue."""
    def epilogue_idle(trace):
        t0 = min(i.start for i in trace.intervals)
        t1 = max(i.end for i in trace.intervals)
        ep = _union([(i.start, i.end) for i in trace.intervals
                     if i.op in EPILOGUE_OPS and i.actor.startswith("consumer")])
        idle = _idle(trace, t0, t1)
        return _overlap(idle, ep), sum(e - s for s, e in idle)

    ep, total = epilogue_idle(ws_trace)
    pp_ep, _ = epilogue_idle(pp_trace)
    out = {"idle": total / ws_cycles, "epilogue": ep / ws_cycles, "pp_epilogue": pp_ep / ws_cycles}
    if not attention_blocks:
        out["other"] = (total - ep) / ws_cycles
        return out
    _, ws_idle, collided = _per_block_idle(ws_trace)
    _, pp_idle, _ = _per_block_idle(pp_trace)
    floor = sorted(pp_idle)[len(pp_idle) // 2] if pp_idle else 0.0
    collision = sum(max(0.0, i - floor) for i, c in zip(ws_idle, collided) if c)
    out["collision"] = collision / ws_cycles
    out["uncovered"] = (total - ep - collision) / ws_cycles
    out["collided"] = sum(collided) / len(collided) if collided else 0.0
    return out


# --- the map ---------------------------------------------------------------------------------
def attention_map(hw: Hardware, seqlens=SEQLENS, headdims=HEADDIMS) -> dict[tuple[int, int], Point]:
    return {(s, d): attention_point(hw, s, d) for d in headdims for s in seqlens}


def gemm_map(hw: Hardware, ks=GEMM_KS, tiles=GEMM_TILES) -> dict[tuple[int, tuple], Point]:
    return {(k, t): gemm_point(hw, 8192, 8192, k, t) for t in tiles for k in ks}


# --- what we measured -------------------------------------------------------------------------
@dataclass
class Measured:
    workload: str
    run: str                 # where: the results file (and its section)
    shape: tuple             # attention (B, H, S, d, causal, stages); GEMM (M, N, K, dtype)
    ws: float
    pp: float
    spread: tuple = ()       # (ws lo, ws hi, pp lo, pp hi) of the interleaved rounds

    @property
    def gain(self) -> float:
        return self.pp / self.ws - 1

    @property
    def resolved(self) -> bool:
        """The machine orders the pair: their rounds do not overlap."""
        if not self.spread:
            return False
        wl, wh, pl, ph = self.spread
        return wh < pl or ph < wl


GEMM_SECTIONS = ("gemm", "gemm_probe", "gemm_shapes_explore", "gemm_shapes")   # of h200.json


def measured_points() -> list[Measured]:
    """Every pair of `ws` and `ws_pingpong` timed in the same interleaved rounds at their default
    configuration: attention (`h200-attention.json`, 2 consumers, each ring depth, full and
    causal) and the GEMM (`h200.json`: ws 128×256 s3 and pingpong 192×128 s4, persistent, L2
    group 8 or the kernels' default, fp16 and bf16; each of `GEMM_SECTIONS`)."""
    out = []
    path = RESULTS / "h200-attention.json"
    rows = json.loads(path.read_text())["attention"]["rows"] if path.exists() else []
    by: dict = {}
    for r in rows:
        base, _, _ = r["variant"].partition(":")
        if base in ("ws", "ws_pingpong") and r.get("ok") and "tflops" in r:
            key = (r["B"], r["H"], r["S"], r["d"], r["causal"], r.get("stages") or 2)
            by.setdefault(key, {})[base] = r
    for key, pair in sorted(by.items()):
        if len(pair) == 2:
            w, p = pair["ws"], pair["ws_pingpong"]
            out.append(Measured("attention", "h200-attention.json", key, w["tflops"], p["tflops"],
                                (w["tflops_min"], w["tflops_max"], p["tflops_min"], p["tflops_max"])))
    path = RESULTS / "h200.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    for section in GEMM_SECTIONS:
        by = {}
        for r in data.get(section, {}).get("rows", []):
            default = {"ws": ([128, 256, 64], 3), "ws_pingpong": ([192, 128, 64], 4)}.get(r.get("variant"))
            if (default is None or not r.get("ok") or "tflops" not in r or r.get("tile_override")
                    or not r.get("persistent") or r.get("group_m") not in (None, 8)
                    or (r.get("tile"), r.get("stages")) != default):
                continue
            by.setdefault((r["M"], r["N"], r["K"], r["dtype"]), {})[r["variant"]] = r
        for key, pair in by.items():
            if len(pair) == 2:
                w, p = pair["ws"], pair["ws_pingpong"]
                out.append(Measured("gemm", f"h200.json {section}", key, w["tflops"],
                                    p["tflops"], (w.get("tflops_min"), w.get("tflops_max"),
                                                  p.get("tflops_min"), p.get("tflops_max"))))
    return out


def measured_cycles() -> tuple[float, float, float, float] | None:
    """Nsight Compute's cycles per K/V block of ws and ws_pingpong at tab. 2's shape and the
    clocks it saw (`h200-stall.json`): pingpong's cycles gain on the machine, without the cap's
    say (ws clk, pp clk, ws GHz, pp GHz)."""
    path = RESULTS / "h200-stall.json"
    if not path.exists():
        return None
    rows = {r["variant"]: r for r in json.loads(path.read_text())["rows"]}
    w, p = rows.get("ws"), rows.get("ws_pingpong")
    if not (w and p):
        return None
    return w["clk_per_block"], p["clk_per_block"], w["clock_ghz"], p["clock_ghz"]


def placed(m: Measured, hw: Hardware = H200) -> Point:
    """The model's point at a measured pair's exact configuration."""
    if m.workload == "attention":
        b, h, s, d, causal, stages = m.shape
        pt = attention_point(hw, s, d, b, h, causal, stages)
    else:
        M, N, K, dt = m.shape
        pt = gemm_point(hw, M, N, K, (192, 128), DTYPE[dt])
    return replace(pt, measured=m.gain, label=m.run)


def measured_table_points(hw: Hardware = H200) -> list[Point]:
    return [placed(m, hw) for m in measured_points()]


# --- the table -------------------------------------------------------------------------------
def row(pt: Point) -> str:
    i = pt.idle
    meas = "" if pt.measured is None else f"{pt.measured:+6.1%}"
    coll = f"{i['collision']:6.1%}" if "collision" in i else f"{'—':>6s}"
    unc = f"{i['uncovered']:6.1%}" if "uncovered" in i else f"{i['other']:6.1%}"
    return (f"{pt.workload:9s} {pt.hardware:5s} {pt.shape:24s} {pt.tile:8s} {meas:>7s} "
            f"{pt.gain:+7.1%} {pt.cycles_gain:+7.1%} {pt.clock_change:+6.1%}  "
            f"{i['idle']:6.1%} {coll} {unc} {i['epilogue']:6.1%} {i['pp_epilogue']:6.1%}"
            + (f"  {pt.label}" if pt.label else ""))


HEADER = (f"{'workload':9s} {'hw':5s} {'shape':24s} {'pp tile':8s} {'meas.':>7s} {'model':>7s} "
          f"{'cycles':>7s} {'clock':>6s}  {'idle':>6s} {'coll.':>6s} {'uncov.':>6s} {'epil.':>6s} "
          f"{'pp ep.':>6s}")
LEGEND = ("meas.: our H200's gain (pingpong / ws − 1, same interleaved rounds); model: the model's "
          "TFLOP/s gain; cycles: ws's steady CTA cycles over pingpong's − 1; clock: pingpong's "
          "clock over ws's − 1 (the power cap); idle: the tensor core's idle share of "
          "ws's CTA, by cause — coll.: collided blocks beyond pingpong's idle per block, uncov.: "
          "softmax longer than the other consumer's GEMMs (GEMM: waits for data and issue), "
          "epil.: the epilogue; pp ep.: pingpong's exposed epilogue, same scale")


def table(points: list[Point]) -> str:
    return "\n".join([HEADER] + [row(p) for p in points] + ["", LEGEND])


def grid(m: dict, fmt=lambda p: f"{p.gain:+6.1%}") -> str:
    rows_, cols = sorted({k[0] for k in m}), sorted({k[1] for k in m})
    lines = [" " * 10 + "".join(f"{str(c):>12s}" for c in cols)]
    for r in rows_:
        lines.append(f"{r:>10}" + "".join(f"{fmt(m[(r, c)]):>12s}" for c in cols))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fidelity pingpong", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the measured points only, no map")
    a = ap.parse_args(argv)
    if not a.quick:
        for hw in PRESETS:
            print(f"model's gain of ws_pingpong over ws, attention, {hw.name} "
                  "(rows: S, B·S 16K; columns: head dim; 2 consumers)")
            print(grid(attention_map(hw)))
            print(f"\nmodel's gain, GEMM 8192×8192×K, {hw.name} (rows: K; columns: pingpong tile; "
                  "ws 128×256)")
            print(grid(gemm_map(hw)))
            print()
        pts = [attention_point(hw, 8192, d) for hw in PRESETS for d in HEADDIMS]
        pts += [attention_point(hw, 1024, d) for hw in PRESETS for d in HEADDIMS]
        pts += [gemm_point(hw, 8192, 8192, k) for hw in PRESETS for k in (256, 1024, 8192)]
        print("why, at some points of the map:")
        print(table(pts))
        print()
    print("our H200's pairs, each at its exact configuration on the h200 preset:")
    print(table(measured_table_points()))
    cyc = measured_cycles()
    if cyc:
        w, p, fw, fp = cyc
        print(f"\nNsight Compute at tab. 2's shape (h200-stall.json): ws {w:.0f}, ws_pingpong {p:.0f} "
              f"clk a K/V block: pingpong {w / p - 1:+.1%} in cycles, at a clock {fp / fw - 1:+.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
