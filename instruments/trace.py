"""Proton timelines of the warp-specialized kernels: what each warpgroup does, when.

    python -m instruments.trace --out DIR       # on a Hopper GPU: traces, summaries, overhead
    python -m instruments.trace --only attention_fa3_d256 --softmax lane_sum,no_turns --out DIR
                                                # a build with the kernel's softmax switches

runs each of the five kernels once under Proton's instrumentation backend with the kernels'
``PROFILE`` scopes compiled in (``kernels/scopes.py``), and writes per kernel

* ``<name>.trace.json`` — the Chrome/Perfetto trace, trimmed to ``KEEP_CTAS`` CTAs;
* ``<name>.summary.json`` — per role (producer, consumer 0/1) and scope: busy fraction, mean
  duration and the iteration period over the steady state of every CTA (medians over CTAs), in SM
  clocks and in ns, and the instrumentation overhead (the same launch timed with and without the
  scopes).

Which warps: Proton samples one warp per role (``SAMPLED_WARPS``): warp 0 is consumer 0 (the
default partition), warp 4 consumer 1, warp 10 the producer. Triton 3.6 puts a 4-warp worker at
warps 4-7 and pads the 1-warp producer's warpgroup to warps 8-11 with the producer at warp 10 (read
off the partition dispatch table in the PTX; ``tests/kernels/test_trace_compile.py`` checks it for
all five kernels: sampling warp 8, the padding, records no producer events). In the
cooperative GEMM (``ws``) warps 0-3 and 4-7 are the two warpgroups of one consumer partition.

Sizes: attention at FA3 tab. 2's shape but one wave of CTAs (B 1, H 2, S 8448, d 128: 132 CTAs on
132 SMs, the first wave of the B 4 H 16 launch), so the trace stays a few tens of MB before
trimming; the overhead is timed at both that and the full shape. GEMM 8192³ (persistent, one CTA
per SM) with a circular buffer that keeps each warp's last ~2 tiles of events.

Reading a trace back (lanes, windows, the summary) is ``records/trace.py``: plain Python, which
the CPU tests and ``fidelity/lanes.py`` run on the committed files.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from records.trace import (RESULTS, ROLES, add_clock, cta_stats, hand_off_summary,
                           read_events, summarize, trim)

from .harness import measure

__all__ = ["ALL", "KERNELS", "PROBES", "RESULTS", "record", "with_softmax"]
SAMPLED_WARPS = "0,4,10"
# Bytes of the global buffer per sampled warp (Proton needs a power of two per segment). A scope
# costs two 8-byte records: 16 KiB holds 1024 scopes — a whole attention CTA (66 blocks × ≤ 7
# scopes), the last ~2 tiles of a GEMM warp (2 scopes per k-step, 128 k-steps a tile).
SEGMENT = 16 * 1024

# name -> what runs. Attention shapes are (B, H, S, d); "full" is FA3 tab. 2's for the overhead.
KERNELS = {
    "attention_ws": {"workload": "attention", "variant": "ws", "shape": (1, 2, 8448, 128),
                     "full": (4, 16, 8448, 128), "buffer": SEGMENT * 3},
    "attention_ws_pingpong": {"workload": "attention", "variant": "ws_pingpong",
                              "shape": (1, 2, 8448, 128), "full": (4, 16, 8448, 128),
                              "buffer": SEGMENT * 3},
    "attention_fa3": {"workload": "attention", "variant": "fa3", "shape": (1, 2, 8448, 128),
                      "full": (4, 16, 8448, 128), "buffer": SEGMENT * 3},
    "gemm_ws": {"workload": "gemm", "variant": "ws", "shape": (8192, 8192, 8192),
                "full": (8192, 8192, 8192), "buffer": SEGMENT * 3},
    "gemm_ws_pingpong": {"workload": "gemm", "variant": "ws_pingpong", "shape": (8192, 8192, 8192),
                         "full": (8192, 8192, 8192), "buffer": SEGMENT * 3},
}
# Where the model needs more than the five: shallow rings whose refills the consumers wait for, and
# the in-line kernels (no producer: warps 0 and 4 are the two 64-row halves of the one compute
# partition). Recorded on request (`--only`), not by default.
PROBES = {
    "gemm_ws_s2": {**KERNELS["gemm_ws"], "variant": "ws", "stages": 2},
    "gemm_ws_pingpong_s2": {**KERNELS["gemm_ws_pingpong"], "stages": 2},
    "gemm_ws_pingpong_s3": {**KERNELS["gemm_ws_pingpong"], "stages": 3},
    "attention_sequential": {**KERNELS["attention_ws"], "variant": "sequential", "warps": "0,4",
                             "buffer": SEGMENT * 2},
    "attention_pipelined": {**KERNELS["attention_ws"], "variant": "pipelined", "warps": "0,4",
                            "buffer": SEGMENT * 2},
    "attention_overlap": {**KERNELS["attention_ws"], "variant": "overlap", "warps": "0,4",
                          "buffer": SEGMENT * 2},
    # fa3 at S 1K (8 K/V blocks a CTA; 1024 CTAs at d 128, 512 at d 256: 4-8 waves), where a CTA's time outside its loop is
    # 9-17 K clk on the machine (`results/h200-stall-sweep.json`): the `wait Q` and `epilogue`
    # scopes and the CTAs' phases (`cta_phases`)
    "attention_fa3_s1k": {**KERNELS["attention_fa3"], "shape": (8, 16, 1024, 128),
                          "full": (16, 16, 1024, 128)},
    "attention_fa3_s1k_d256": {**KERNELS["attention_fa3"], "shape": (8, 8, 1024, 256),
                               "full": (16, 8, 1024, 256)},
    # fa3's default launch at its worst grid point, d 64 S 1K causal (0.87-0.91 of cuDNN on
    # every board): persistent, 128 x 128, the causal tiles in pairs (`host.launch_defaults`);
    # 132 CTAs of ~31 tiles, ~140 blocks each
    "attention_fa3_s1k_d64_causal": {**KERNELS["attention_fa3"], "shape": (16, 32, 1024, 64),
                                     "full": (16, 32, 1024, 64), "causal": True,
                                     "tile": (128, 128), "persistent": "pairs",
                                     "buffer": SEGMENT * 4 * 3},
    # fa3 at d 256 (128 x 64 blocks, 132 CTAs: one wave), where the model's block is 12 % short
    # of Nsight Compute's cycles (`results/h200-stall-sweep.json`); 132 blocks a CTA, 7 scopes
    # each: 64 KiB a warp
    "attention_fa3_d256": {**KERNELS["attention_fa3"], "shape": (1, 2, 8448, 256),
                           "full": (4, 8, 8448, 256), "buffer": SEGMENT * 4 * 3},
}
ALL = {**KERNELS, **PROBES}


def _mode(buffer: int, warps: str = SAMPLED_WARPS):
    """Proton's mode: a global buffer of `buffer` bytes a CTA, the listed warps sampled."""
    import triton.profiler as proton

    # global buffer: the kernels leave little shared memory; one warp per warpgroup sampled
    return proton.mode.Default(buffer_type="global", buffer_size=buffer,
                               sampling_strategy="selective", sampling_options=warps)


def _sampled(spec: dict) -> dict[int, str]:
    """The roles this kernel's sampled warps play (the in-line kernels have no producer)."""
    warps = {int(w) for w in spec.get("warps", SAMPLED_WARPS).split(",")}
    return {w: r for w, r in ROLES.items() if w in warps}


def _spec_mode(spec: dict):
    return _mode(spec["buffer"], ",".join(str(w) for w in _sampled(spec)))


def with_softmax(name: str, softmax) -> tuple[str, dict]:
    """Kernel `name` built with the softmax switches `softmax` (names of
    `kernels.attention.SOFTMAX_SWITCHES`; empty: its default build): the name its files get
    (`<name>+<switch>+...`, as the benchmarks name a switched build) and its spec. Raises
    ValueError for a kernel without the switches or a name that is none of them."""
    from kernels.attention import host

    spec = dict(ALL[name])
    softmax = tuple(softmax)
    if not softmax:
        return name, spec
    if spec["workload"] != "attention" or spec["variant"] not in host.OVERLAP_VARIANTS:
        raise ValueError(f"{name}: only the overlapped attention kernels "
                         f"({', '.join(host.OVERLAP_VARIANTS)}) take softmax switches")
    host.softmax_bits(softmax)                       # an unknown name fails here, by name
    return "+".join((name, *softmax)), {**spec, "softmax": softmax}


def attention_build(spec: dict, head_dim: int) -> tuple:
    """(kernel, config, build options) of an attention spec at `head_dim`: what the trace launches
    and what the CPU tests compile (`kernels.attention.host.launch` / `compile_sm90`)."""
    from kernels.attention import KERNELS as AK
    from kernels.attention import host

    cfg = host.config(spec["variant"], head_dim, spec.get("causal", False), spec.get("stages"),
                      spec.get("tile"), spec.get("persistent", False))
    return AK[spec["variant"]], cfg, {"fence": spec.get("fence", True),
                                      "softmax": spec.get("softmax")}


def softmax_built(spec: dict) -> list[str]:
    """The softmax switches an attention spec's build runs with: its own, else the launcher's
    default at its head dim and launch (`host.softmax_default`: lane_sum and tree_max for fa3 at
    d 256, no_turns on d 64's persistent launch)."""
    from kernels.attention import host

    if spec.get("softmax") is not None:
        return list(spec["softmax"])
    return list(host.softmax_default(spec["variant"], spec["shape"][3],
                                     bool(spec.get("persistent", False))))


def _runner(spec: dict, shape, profile: bool):
    """(launch(), check()) for one kernel at `shape`: launch() runs it once (scopes compiled in
    with `profile`), check() returns its relative error against torch."""
    import torch

    torch.manual_seed(0)
    if spec["workload"] == "attention":
        from kernels.attention import host as common

        B, H, S, D = shape
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty((B, H, S), device="cuda", dtype=torch.float32)
        kernel, cfg, options = attention_build(spec, D)
        scale = common.default_scale(D)
        causal = spec.get("causal", False)

        def launch():
            common.launch(kernel, q, k, v, o, lse, cfg, causal, scale, profile=profile, **options)

        def check():
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale,
                                                                   is_causal=causal)
            return ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        return launch, check
    from kernels.gemm import KERNELS as GK
    from kernels.gemm import common as gcommon
    from kernels.gemm import config as gconfig

    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    cfg = gconfig(spec["variant"], stages=spec.get("stages"))

    def launch():
        gcommon.launch(GK[spec["variant"]], a, b, c, cfg, profile=profile)

    def check():
        ref = a.float() @ b.float()
        return ((c.float() - ref).norm() / ref.norm()).item()
    return launch, check


def _time_ms(fn) -> float:
    return measure(fn, 0.0, warmup_ms=10, rep_ms=60)["ms"]


def overhead(spec: dict, shape, rounds: int = 2) -> dict:
    """The scoped kernel against the plain one at `shape`, do_bench medians in `rounds` rounds of
    alternating order (the SM clock drifts down as the card heats: whoever runs first in a
    process gains up to ~12 %: `instruments/tools/order_probe.py`). The scoped kernel runs with
    Proton's device side on (its passes and buffer) but none of its launch hooks, so do_bench
    times the kernel alone."""
    from triton.profiler.hooks.instrumentation import InstrumentationHook

    plain, _ = _runner(spec, shape, False)
    scoped, _ = _runner(spec, shape, True)
    hook = InstrumentationHook(_spec_mode(spec))

    def time_scoped():
        hook.activate()
        try:
            return _time_ms(scoped)
        finally:
            hook.deactivate()

    t = {"plain": [], "scoped": []}
    for r in range(rounds):
        order = (("plain", lambda: _time_ms(plain)), ("scoped", time_scoped))
        for key, fn in order if r % 2 == 0 else order[::-1]:
            t[key].append(fn())
    med = {k: statistics.median(v) for k, v in t.items()}
    return {"shape": list(shape), "plain_ms": med["plain"], "scoped_ms": med["scoped"],
            "overhead": med["scoped"] / med["plain"] - 1, "rounds_ms": t}


def launch_tile(spec: dict) -> dict:
    """The launch's tile and ring depth, for the model to run the same kernel."""
    if spec["workload"] == "attention":
        _, c, _ = attention_build(spec, spec["shape"][3])
        return {"BM": c.BM, "BN": c.BN, "consumers": c.consumers, "stages": c.stages}
    from kernels.gemm import config
    c = config(spec["variant"], stages=spec.get("stages"))
    return {"BM": c.BM, "BN": c.BN, "BK": c.BK, "stages": c.stages}


def record(name: str, out: Path, timing: bool = True, fence=True, softmax=()) -> dict:
    """Trace kernel `name` (its overlapped builds with the schedule fence `fence`: True, False or
    "hoisted", `kernels.attention.FENCES`, and the softmax switches `softmax`, `with_softmax`)
    and write its trace and summary to `out`, under the name `with_softmax` gives."""
    import torch
    import triton.profiler as proton

    name, spec = with_softmax(name, softmax)
    spec["fence"] = fence
    raw = out / f"{name}_proton"
    t0 = time.time()
    launch, check = _runner(spec, spec["shape"], True)
    proton.start(str(raw), data="trace", backend="instrumentation", mode=_spec_mode(spec))
    launch()
    torch.cuda.synchronize()
    proton.finalize()
    err = check()
    path = next(out.glob(f"{raw.name}*"))           # Proton adds the suffix (.chrome_trace)
    trace = json.loads(path.read_text())
    t_trace = time.time() - t0
    n_events = len(trace["traceEvents"])
    try:
        trimmed = trim(trace, spec["workload"])
        (out / f"{name}.trace.json").write_text(json.dumps(trimmed, separators=(",", ":")))
        events = read_events(trace)
        summary = summarize(events, spec["workload"])
        if spec["workload"] == "gemm":
            summary["hand_off"] = hand_off_summary(events, launch_tile(spec)["stages"])
        del events
    except Exception:
        # keep a sample of what Proton wrote, to see why it could not be read
        (out / f"{name}.sample.json").write_text(json.dumps(trace["traceEvents"][:300]))
        raise
    finally:
        path.unlink()
    del trace
    # the same measures from the committed (trimmed) trace alone: what the CPU test re-derives
    summary["kept_ctas"] = {str(c): cta_stats(v["lanes"], spec["workload"])
                            for c, v in read_events(trimmed).items()}
    # Overhead: the same kernel with and without scopes, at the traced and the full shape.
    times = {}
    for label, shape in (("traced_shape", spec["shape"]), ("full_shape", spec["full"])) * timing:
        if label == "full_shape" and shape == spec["shape"]:
            times[label] = times["traced_shape"]
            continue
        try:
            times[label] = overhead(spec, shape)
        except Exception as e:  # noqa: BLE001 (the trace is worth keeping without the timing)
            times[label] = {"shape": list(shape), "error": f"{type(e).__name__}: {e}"}
    summary.update({
        "kernel": name, "workload": spec["workload"], "variant": spec["variant"],
        "traced_shape": list(spec["shape"]), "dtype": "float16",
        "causal": spec.get("causal", False), "persistent": spec.get("persistent", False),
        "tile": launch_tile(spec),
        **({"softmax": softmax_built(spec)} if spec["workload"] == "attention" else {}),
        "sampled_warps": {str(w): r for w, r in _sampled(spec).items()},
        "buffer_bytes_per_cta": spec["buffer"], "rel_error_vs_torch": err,
        "timing": times, "trace_events_total": n_events,
        "trace_events_kept": len(trimmed["traceEvents"]), "seconds": round(time.time() - t0, 1),
        "seconds_trace": round(t_trace, 1),
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "triton": __import__("triton").__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                          time.gmtime()),
    })
    add_clock(summary)
    (out / f"{name}.summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--only", nargs="*", choices=list(ALL), default=list(KERNELS))
    p.add_argument("--no-timing", action="store_true", help="traces only, no overhead timing")
    p.add_argument("--fence", default="True", choices=("True", "False", "hoisted"),
                   help="the overlapped kernels' schedule fence (hoisted: the wait for P·V written "
                        "right after the scores' wait, which the Proton records cannot move)")
    p.add_argument("--softmax", default="", type=lambda t: tuple(n for n in t.split(",") if n),
                   help="softmax switches of the overlapped attention builds, comma-separated "
                        "(kernels.attention.SOFTMAX_SWITCHES; e.g. lane_sum,no_turns); the files "
                        "are named <kernel>+<switch>+...")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in args.only:
        try:
            s = record(name, args.out, timing=not args.no_timing,
                       fence={"True": True, "False": False}.get(args.fence, args.fence),
                       softmax=args.softmax)
        except Exception as e:  # noqa: BLE001 (one kernel failing must not cost the others)
            failed += 1
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
            continue
        over = {k: f"{v['overhead']:+.1%}" if "overhead" in v else v.get("error")
                for k, v in s["timing"].items()} or "not timed"
        print(f"{name}: {s['ctas']} CTAs, period {s['period_clk']:.0f} clk, clock "
              f"{s['clock_ghz_from_stamps']} GHz, err {s['rel_error_vs_torch']:.1e}, overhead "
              f"{over}, {s['trace_events_total']} events, {s['seconds']} s", flush=True)
        if s.get("phases"):
            print("    phases (clk):", json.dumps({k: round(v) for k, v in s["phases"].items()}),
                  flush=True)
        for role, scopes in s["roles"].items():
            print("   ", role, {n: (round(v["busy"], 3), round(v["mean_clk"] or 0))
                                for n, v in scopes.items()}, flush=True)
        if "hand_off" in s:
            print("    hand-off (clk):", json.dumps(s["hand_off"]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
