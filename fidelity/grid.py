"""Head dim and sequence length as physics — `python -m fidelity grid [--hardware h200|h100]`.

Our `fa3` was measured beside cuDNN and SDPA-flash on a grid (`results/h200-attention-grid.json`:
d ∈ {64, 128, 256} × S ∈ {1K, 4K, 16K}, B·S = 16K, H·d = 2048, causal and not). Here the model
predicts each point at the tile the kernel ran (`sim.config.kernel_tile`, sim/tiles.json:
192×128 with 3 consumers at d 64, 128×128 at d 128, 128×64 at d 256) and says, from its own
units, where the cycles go:

* **per K/V block** (the steady state): the tensor core's math, BM·BN·d·4 FLOP / 4096 FLOP/clk,
  against the block's period, and the SFU's exps, BM·BN / 16 per clk. A block has BM·BN exps for
  4·BM·BN·d FLOP: **exps per FLOP = 1 / (4d)**, so the SFU needs 64/d of the tensor core's time —
  as long as the tensor core at d 64, half at d 128, a quarter at d 256. That is why larger head
  dims run closer to the tensor peak. What grows with d instead: the rescale of O (rows·d FMULs a
  block, per FLOP 1/(4·BN): twice as much at BN 64 as at BN 128), the Q load and the epilogue (∝
  d, once per CTA).
* **per CTA** (fixed): what a CTA of n blocks costs beyond n steady blocks — Q from HBM before the
  first Q·Kᵀ, the ring's fill, the last P·V drained, the epilogue (O through shared memory and out
  at the SM's share of HBM) — and the SM's turnover to the next CTA (`cta_launch_clk`). At S 1K a
  CTA walks 8 blocks at d 64/128 (BN 128) and 16 at d 256 (BN 64); at S 16K, 128 and 256.
* **per launch**: the tail wave (CTAs against 132 SMs: the last SMs to finish set the time;
  causal CTAs are of unequal length) and the launch's fixed 1.6 µs.

The shares add up to the predicted time. `account()` takes apart the launch
`sim.predict.predict_attention` runs (`attention_launch`) and gets the same TFLOP/s.
"""
from __future__ import annotations

import argparse
import functools
import json
import statistics
from dataclasses import dataclass, field

from records import RESULTS
from sim import attention
from sim.config import AttentionConfig
from sim.config import kernel_tile as config_tile
from sim.hardware import Hardware
from sim.hardware import get as get_hardware
from sim.predict import attention_launch

GRID_FILE = "h200-attention-grid.json"
HEAD_DIMS = (64, 128, 256)
SEQLENS = (1024, 4096, 16384)
TOKENS, HIDDEN = 16384, 2048        # B·S and H·d of FA3 fig. 5's sweep (GRID_FILE's shapes)


@dataclass
class Account:
    """One configuration's predicted time, taken apart by the model's own units."""
    tflops: float
    clock_hz: float
    seconds: float
    ctas: int                   # CTAs launched
    slots: int                  # CTAs the GPU holds at once (SMs × CTAs per SM)
    blocks_per_cta: float       # K/V blocks a CTA walks (mean)
    block_clk: float            # a steady block's period, one SM
    tensor_per_block: float     # the tensor core's math over that period
    sfu_per_block: float        # the SFU's exps over that period
    exps_per_kflop: float       # 1000 / (4 d)
    shares: dict[str, float] = field(default_factory=dict)   # of the predicted seconds

    @property
    def waves(self) -> float:
        return self.ctas / self.slots


def config(d: int, S: int, causal: bool, tile: tuple[int, int, int] | None = None,
           variant: str = "fa3") -> AttentionConfig:
    """The grid's point: B·S = 16K, H·d = 2048; at `tile` (BM, BN, consumers) or FA3's own."""
    bm, bn, c = tile or (None, None, None)
    return AttentionConfig(batch=TOKENS // S, heads=HIDDEN // d, seqlen=S, headdim=d,
                           causal=causal, variant=variant, block_m=bm, block_n=bn, consumers=c)


def account(cfg: AttentionConfig, hw: Hardware) -> Account:
    """`sim.predict.attention_launch` (the steps `predict_attention` takes), its CTAs' times
    taken apart."""
    run = attention_launch(cfg, hw)
    cfg, at, makespan, times, blocks = run.config, run.hardware, run.makespan, run.times, run.blocks
    m_typ = run.typical[1]
    # the steady block: the slope of a CTA's time over 16 more blocks (as many masked)
    k = 16
    t1 = attention.simulate(cfg, at, k, min(m_typ, k))[0]
    t2 = attention.simulate(cfg, at, 2 * k, min(m_typ, k))[0]
    block = (t2 - t1) / k
    slots = at.sms * run.ctas_per_sm
    sm_clk = makespan * slots
    work = block * sum(blocks)
    turnover = at.cta_launch_clk * len(times)
    fixed = sum(times) - work - turnover
    tail = sm_clk - sum(times)
    sm_s = makespan / at.clock_hz
    seconds = sm_s + at.kernel_launch_s
    hbm_s = cfg.batch * cfg.heads * cfg.seqlen * cfg.headdim * 2 * 4 / at.hbm_bytes_per_s
    seconds = max(seconds, hbm_s)
    scale = sm_s / sm_clk / seconds
    shares = {"blocks": work * scale, "per CTA": fixed * scale, "turnover": turnover * scale,
              "tail": tail * scale, "launch": at.kernel_launch_s / seconds}
    math = 4 * cfg.block_m * cfg.block_n * cfg.headdim / at.tensor_flop_per_clk
    exps = cfg.block_m * cfg.block_n / at.sfu_exp_per_clk
    return Account(tflops=cfg.flops / seconds / 1e12, clock_hz=at.clock_hz, seconds=seconds,
                   ctas=len(times), slots=slots, blocks_per_cta=sum(blocks) / len(blocks),
                   block_clk=block, tensor_per_block=math / block, sfu_per_block=exps / block,
                   exps_per_kflop=1000 / (4 * cfg.headdim), shares=shares)


@dataclass
class Point:
    d: int
    S: int
    causal: bool
    tile: tuple[int, int, int]
    measured: float | None              # our fa3's default build (GRID_FILE), TFLOP/s
    spread: tuple[float, float] | None
    cudnn: float | None
    flash: float | None
    model: Account

    @property
    def error(self) -> float | None:
        return None if not self.measured else self.model.tflops / self.measured - 1


def measured_rows() -> list[dict]:
    path = RESULTS / GRID_FILE
    return json.loads(path.read_text())["attention"]["rows"] if path.exists() else []


def kernel_tile(d: int, causal: bool) -> tuple[int, int, int]:
    """(block_m, block_n, consumers) our fa3 ran at head dim d (sim/tiles.json, "gluon")."""
    return tuple(config_tile("fa3", d, causal))


@functools.cache
def points(hardware: str = "h200") -> tuple[Point, ...]:
    """Every (d, S, causal) of the grid: measured (our H200) and the model on `hardware` at our
    kernel's tile (kept: the chapter and the tests ask again)."""
    hw = get_hardware(hardware)
    rows = measured_rows()

    def pick(variant, d, S, causal):
        for r in rows:
            if (r["variant"], r["d"], r["S"], r["causal"]) == (variant, d, S, causal) and r.get("ok"):
                return r
        return None

    out = []
    for causal in (False, True):
        for d in HEAD_DIMS:
            for S in SEQLENS:
                tile = kernel_tile(d, causal)
                ours, cudnn, flash = (pick(v, d, S, causal) for v in ("fa3", "sdpa_cudnn", "sdpa_flash"))
                out.append(Point(
                    d, S, causal, tile, ours and ours["tflops"],
                    (ours["tflops_min"], ours["tflops_max"]) if ours else None,
                    cudnn and cudnn["tflops"], flash and flash["tflops"],
                    account(config(d, S, causal, tile), hw)))
    return tuple(out)


def summary(pts) -> dict:
    errs = [abs(p.error) for p in pts if p.error is not None]
    return {"points": len(errs), "median_abs_error": statistics.median(errs),
            "max_abs_error": max(errs), "within_10pct": sum(e <= 0.10 for e in errs)}


def trend(pts, S: int, causal: bool, key=lambda p: p.measured) -> dict[int, float]:
    """d → the value at one S and mask, e.g. measured or model TFLOP/s."""
    return {p.d: key(p) for p in pts if p.S == S and p.causal == causal}


def table(pts) -> str:
    head = (f"{'d':>3s} {'S':>5s} {'mask':6s} {'tile':>9s} {'blk/CTA':>7s} {'CTAs':>5s} "
            f"{'waves':>5s} {'fa3':>5s} {'cuDNN':>5s} {'model':>5s} {'error':>6s} {'MHz':>5s} | "
            f"{'exp/kF':>6s} {'tensor':>6s} {'SFU':>4s} | {'blocks':>6s} {'perCTA':>6s} "
            f"{'turn':>5s} {'tail':>5s} {'launch':>6s}")
    lines = [head]
    for p in pts:
        a = p.model
        bm, bn, _ = p.tile
        s = a.shares
        meas = f"{p.measured:5.0f}" if p.measured else "    -"
        cud = f"{p.cudnn:5.0f}" if p.cudnn else "    -"
        err = f"{p.error:+6.1%}" if p.error is not None else ""
        lines.append(
            f"{p.d:3d} {p.S:5d} {'causal' if p.causal else 'full':6s} {f'{bm}x{bn}':>9s} "
            f"{a.blocks_per_cta:7.1f} {a.ctas:5d} {a.waves:5.2f} {meas} {cud} {a.tflops:5.0f} "
            f"{err:>6s} {a.clock_hz / 1e6:5.0f} | {a.exps_per_kflop:6.2f} {a.tensor_per_block:6.0%} "
            f"{a.sfu_per_block:4.0%} | {s['blocks']:6.0%} {s['per CTA']:6.0%} {s['turnover']:5.1%} "
            f"{s['tail']:5.1%} {s['launch']:6.1%}")
    lines.append(f"(fa3: our kernel ({GRID_FILE}), TFLOP/s; model: h200 preset at the "
                 "kernel's tile and the clock the power cap gives it (MHz); exp/kF: exps per 1000 FLOP = 1000/(4d); "
                 "tensor, SFU: busy over a steady K/V block; the rest: shares of the predicted "
                 "time — steady blocks, each CTA's fixed cost beyond them (Q load, ring fill, "
                 "drain, epilogue), the SMs' turnover, the tail wave, the launch)")
    if any(p.error is not None for p in pts):
        s = summary(pts)
        lines.append(f"{s['within_10pct']} of {s['points']} within ±10 %; median |error| "
                     f"{s['median_abs_error']:.1%}, max {s['max_abs_error']:.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fidelity grid", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hardware", default="h200")
    a = ap.parse_args(argv)
    pts = points(a.hardware)
    if a.hardware != "h200":
        pts = tuple(Point(p.d, p.S, p.causal, p.tile, None, None, p.cudnn, p.flash, p.model)
                    for p in pts)
    print(table(pts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
