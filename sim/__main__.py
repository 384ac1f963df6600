"""`python -m sim` — the model from the command line.

    python -m sim                      the default story: attention ablation on h100 and h200
    python -m sim predict ...          one prediction (add --json for a machine-readable line)
    python -m sim timeline ...         one variant's Gantt chart (PNG) and Perfetto trace (JSON)
    python -m sim paper                the model against the FA3 paper's numbers
    python -m sim bench                the model's own speed
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import attention, gemm, hardware
from .config import AttentionConfig, GemmConfig
from .predict import predict

STORY_VARIANTS = ("sequential", "fa2", "pipelined", "ws", "ws_pingpong", "overlap", "fa3", "overlap3")
TIMELINE_VARIANTS = ("ws", "ws_pingpong", "overlap", "fa3")


def _config(a) -> AttentionConfig | GemmConfig:
    if a.workload == "attention":
        variant, *switches = a.variant.split("+")       # the bench's names: fa3+rescale_early
        if variant not in attention.VARIANTS + attention.BLACKWELL_VARIANTS:
            raise ValueError(f"unknown attention variant {variant!r}: expected one of "
                             f"{', '.join(attention.VARIANTS + attention.BLACKWELL_VARIANTS)}, "
                             "then any +switch")
        return AttentionConfig(batch=a.batch, heads=a.heads, seqlen=a.seqlen, headdim=a.headdim,
                               causal=a.causal, dtype=a.dtype, variant=variant,
                               block_m=a.block_m, block_n=a.block_n, stages=a.stages or 2,
                               consumers=a.consumers, persistent=a.persistent,
                               switches=tuple(switches))
    if a.variant not in gemm.VARIANTS:
        raise ValueError(f"unknown GEMM variant {a.variant!r}: expected one of "
                         f"{', '.join(gemm.VARIANTS)}")
    return GemmConfig(m=a.m, n=a.n, k=a.k, dtype=a.dtype, variant=a.variant, block_m=a.block_m,
                      block_n=a.block_n, block_k=a.block_k, stages=a.stages, consumers=a.consumers)


def _workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hardware", default="h100", help=f"one of {sorted(hardware.PRESETS)}")
    p.add_argument("--workload", default="attention", choices=("attention", "gemm"))
    p.add_argument("--variant", default="fa3",
                   help="attention: a variant, then any +switch of its kernel's (fa3+rescale_early"
                        "+no_turns; sim/config.py SCHEDULE_SWITCHES; fa4's: FA4_SWITCHES, on b200)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seqlen", type=int, default=8448)
    p.add_argument("--headdim", type=int, default=128)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--persistent", action="store_true",
                   help="attention fa3: one CTA per SM over a tile list (sim/attention/persistent.py)")
    p.add_argument("--dtype", default="fp16", choices=("fp16", "bf16", "fp8"))
    p.add_argument("--m", type=int, default=8192)
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--block-m", type=int)
    p.add_argument("--block-n", type=int)
    p.add_argument("--block-k", type=int)
    p.add_argument("--stages", type=int)
    p.add_argument("--consumers", type=int)


def cmd_predict(a) -> int:
    p = predict(_config(a), hardware.get(a.hardware))
    if a.json:
        print(json.dumps(p.to_json()))
    else:
        util = "  ".join(f"{u} {v:.0%}" for u, v in p.utilization.items() if v)
        name = "+".join((p.variant, *p.config.get("switches", ())))
        print(f"{p.workload} {name} on {p.hardware}: {p.tflops:.0f} TFLOPs/s "
              f"({p.seconds * 1e3:.3f} ms, {p.waves:g} waves, {p.bound}-bound)  {util}")
    return 0


def cmd_timeline(a) -> int:
    from . import plot
    hw = hardware.get(a.hardware)
    p = predict(_config(a), hw, keep_trace=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{p.workload}-{p.variant}-{hw.name}"
    ax = plot.gantt(p.trace, f"{p.variant} on {hw.name}: {p.tflops:.0f} TFLOPs/s (steady state)",
                    plot.steady_window(p.trace), clock_hz=hw.clock_hz)
    ax.figure.savefig(out / f"{stem}.png", dpi=120)
    p.trace.write_chrome(out / f"{stem}.trace.json", hw.clock_hz)
    print(f"wrote {out / f'{stem}.png'} and {out / f'{stem}.trace.json'} (open in ui.perfetto.dev)")
    return 0


def cmd_story(a, measured: dict[str, float] | None = None) -> int:
    """The attention ablation on h100 and h200: a table, and the figures that explain it. The h100
    column beside the model is the paper's tab. 2; `measured` (TFLOP/s by variant, our H200 runs)
    fills the h200 column: `python -m fidelity story` passes it, the model alone has none."""
    from . import plot
    from .paper import TAB2, TAB2_REPORTED
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    reference = {"h100": ("paper (H100)", TAB2_REPORTED),
                 "h200": ("measured (our H200)", measured or {})}
    for name in ("h100", "h200"):
        hw = hardware.get(name)
        label, ref = reference[name]
        preds = {v: predict(AttentionConfig(variant=v, **TAB2), hw, keep_trace=True)
                 for v in STORY_VARIANTS}
        print(f"\n{name}: attention forward, B 4, H 16, S 8448, d 128, fp16, non-causal "
              f"(FA3 tab. 2); tensor peak {hw.peak_tflops:.0f} TFLOPs/s")
        print(f"{'variant':12s} {'TFLOPs/s':>9s} {'tensor':>7s} {'SFU':>6s} {'TMA':>6s}  "
              f"{'tile':24s} {label}")
        for v, p in preds.items():
            u = p.utilization
            tile = f"{p.config['block_m']}×{p.config['block_n']}, {p.config['stages']} stages"
            seen = f"{ref[v]:.0f}" if v in ref else ""
            print(f"{v:12s} {p.tflops:9.0f} {u['tensor']:7.0%} {u['sfu']:6.0%} {u['tma']:6.0%}  "
                  f"{tile:24s} {seen}")
        if "sdpa_cudnn" in ref:
            print(f"{'cuDNN':12s} {'':33s}{'':24s} {ref['sdpa_cudnn']:.0f}")
            print("(measured: fa2 is SDPA's flash backend; our kernels ran 128×128 tiles — "
                  "`python -m fidelity` predicts each at its own tile)")
        ax = plot.ablation({v: p.tflops for v, p in preds.items()}, name, paper=ref if name == "h100"
                           else None, measured=ref if name == "h200" else None,
                           peak=hw.peak_tflops, title=f"attention ablation on {name} (model)")
        ax.figure.savefig(out / f"ablation-{name}.png", dpi=120)
        ax = plot.utilization_bars({v: p.utilization for v, p in preds.items()},
                                   title=f"unit utilization on {name} (model)")
        ax.figure.savefig(out / f"utilization-{name}.png", dpi=120)
        if name == "h100":
            for v in TIMELINE_VARIANTS:
                p = preds[v]
                ax = plot.gantt(p.trace, f"{v}: {p.tflops:.0f} TFLOPs/s (steady state)",
                                plot.steady_window(p.trace, 0.12), clock_hz=hw.clock_hz)
                ax.figure.savefig(out / f"timeline-{v}-{name}.png", dpi=120)
                p.trace.write_chrome(out / f"timeline-{v}-{name}.trace.json", hw.clock_hz)
        plot.plt.close("all")
    print(f"\nfigures and Perfetto traces in {out}/")
    return 0


def cmd_paper(a) -> int:
    from .paper import checks, table
    rows = checks(hardware.get(a.hardware))
    print(table(rows))
    return 0 if all(c.ok for c in rows) else 1


def cmd_bench(a) -> int:
    """How fast the model is: the tab. 2 prediction of each variant, and the default story."""
    from .paper import TAB2
    hw = hardware.get("h100")
    print(f"{'what':40s} {'seconds':>8s}")
    for v in ("fa3", "ws_pingpong", "fa2"):
        t0 = time.perf_counter()
        predict(AttentionConfig(variant=v, **TAB2), hw)
        print(f"{'predict attention ' + v + ' (tab. 2)':40s} {time.perf_counter() - t0:8.2f}")
    t0 = time.perf_counter()
    predict(GemmConfig(variant="ws_pingpong"), hw)
    print(f"{'predict gemm ws_pingpong 8192³':40s} {time.perf_counter() - t0:8.2f}")
    if a.story:
        import contextlib
        import io
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            cmd_story(argparse.Namespace(out=a.out))
        print(f"{'default story (table + figures)':40s} {time.perf_counter() - t0:8.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/story", help="folder for the story's figures")
    sub = parser.add_subparsers(dest="cmd")
    p = sub.add_parser("predict", help="one whole-GPU prediction")
    _workload_args(p)
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("timeline", help="one variant's Gantt chart and Perfetto trace")
    _workload_args(p)
    p.add_argument("--out", default="out/timeline")
    p = sub.add_parser("paper", help="the model against FA3's numbers")
    p.add_argument("--hardware", default="h100")
    p = sub.add_parser("bench", help="the model's own speed")
    p.add_argument("--story", action="store_true", help="also time the default story")
    p.add_argument("--out", default="out/bench-story")
    a = parser.parse_args(argv)
    handler = {"predict": cmd_predict, "timeline": cmd_timeline, "paper": cmd_paper,
               "bench": cmd_bench, None: cmd_story}[a.cmd]
    try:
        return handler(a)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
