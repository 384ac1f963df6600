"""Attention benchmark: ``python -m instruments.bench_attention [--quick] [--sweep] [--variants ...]``.

Every variant of ``kernels.attention`` and torch SDPA's flash (FA2) and cuDNN backends are timed
**in the same run** with ``triton.testing.do_bench`` medians, in interleaved rounds with the SM
clock and board power logged (``instruments.harness.check_then_time``: the GPU's boost clock
favours whatever runs first), each after a correctness check of a poisoned output against a
float64 reference (on the first two (batch, head) pairs: the full float64 reference at S 8448
would take longer than the kernels), on fresh random inputs (never zeros). FLOPs = 4·B·H·S²·d,
halved for causal. The table prints each row's TFLOP per joule beside cuDNN's.

Headline: FA3 tab. 2's setting (B 4, H 16, S 8448, d 128, fp16, non-causal, and causal).
``--sweep``: part of FA3 fig. 5 (B·S = 16k, H = 2048/d) for ``fa3`` and the two peers.
``--grid``: that grid alone (d 64/128/256 x S 1K/4K/16K x causal) for every ``--variants``
entry beside the peers, the headline only for ``--headline-variants``; ``--dims`` keeps some of
its head dims (so a d-specific A/B compiles only what it times). A variant name may carry
the SOFTMAX switches: ``fa3+tree_max+lane_sum``, ``fa3+rescale_early``, ``fa3+no_turns``,
``fa3+one_release``, ``fa3+named_turns`` (``host.SOFTMAX_SWITCHES``,
``kernels/attention/steps.py``; named switches replace ``host.SOFTMAX_DEFAULT``, so at d 256
``fa3`` is ``fa3+lane_sum+tree_max``), and ``+persistent`` (fa3: one CTA per SM,
``kernels/attention/persistent.py``), ``+pairs`` (persistent, causal tiles in pairs) or
``+plain`` (the head dim's tile, one CTA per tile,
whatever ``host.persistent_default`` says), ``+unplanned`` (every call the whole host path,
no launch plan: ``kernels/plans.py``), and ``@BMxBN`` after the variant
(``fa3@128x128+persistent``: another tile, ``attention(tile=...)``). Names are checked
(``parse_variant``) before anything runs. Writes ``results/<gpu>-attention.json`` (and into ``--out``/``$OUT``); prints a table
last.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path

from instruments.harness import (ClockLog, check_then_time, gpu_environment, gpu_slug, now, out_dirs,
                                 per_joule, smi)

VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3")
# ring-depth experiments, timed at the headline (non-causal) only
EXTRAS = ("ws:s3", "ws_pingpong:s3", "overlap:s2", "fa3:s2")
PEERS = ("sdpa_flash", "sdpa_cudnn")
TOL = {"float16": 4e-3, "bfloat16": 2.5e-2}
CHECK_HEADS = 2


def reference(q, k, v, causal):
    """float64 O for the first CHECK_HEADS (batch, head) pairs."""
    import torch

    B, H, S, D = q.shape
    qd, kd, vd = (t.reshape(B * H, S, D)[:CHECK_HEADS].double() for t in (q, k, v))
    s = (qd @ kd.transpose(-1, -2)) / math.sqrt(D)
    if causal:
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vd


def split_tile(name: str) -> tuple[str, tuple[int, int] | None]:
    """``"fa3@128x64+persistent"`` -> ``("fa3+persistent", (128, 64))``; no ``@``: (name, None).
    Raises ValueError for a tile that is not two integers."""
    head, at, rest = name.partition("@")
    if not at:
        return name, None
    dims, plus, switches = rest.partition("+")
    try:
        bm, bn = (int(x) for x in dims.split("x"))
    except ValueError:
        raise ValueError(f"{name}: a tile is @BMxBN, e.g. fa3@128x128") from None
    return head + plus + switches, (bm, bn)


def parse_variant(name: str) -> tuple[str, int | None, tuple[str, ...] | None, bool | None]:
    """``"fa3:s3+tree_max+persistent"`` -> (variant, ring stages, softmax switches, persistent):
    ``"fa3", 3, ("tree_max",), True``. None: the variant's default (stages), ``SOFTMAX_DEFAULT``
    (no switch named), ``host.persistent_default`` (neither ``+persistent`` nor ``+plain``). Raises
    ValueError for an unknown variant or switch."""
    from kernels.attention import host

    base, *switches = name.split("+")
    pers = ("pairs" if "pairs" in switches else True if "persistent" in switches
            else False if "plain" in switches else None)
    switches = tuple(x for x in switches if x not in ("persistent", "pairs", "plain", "unplanned"))
    variant, _, st = base.partition(":s")
    if variant not in VARIANTS:
        raise ValueError(f"{name}: variant must be one of {', '.join(VARIANTS)}")
    host.softmax_bits(switches)
    return variant, int(st) if st else None, switches or None, pers


def peer_fn(name, q, k, v, causal):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}[name]
    F = torch.nn.functional

    def fn():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fn


def check(out, ref, B, H, S, D):
    """``check_then_time``'s check for one setting: ``fn()`` on a poisoned ``out`` (a peer
    returns its own tensor), its first CHECK_HEADS (batch, head) pairs against ``ref``."""
    import torch

    def rel_err(fn) -> float:
        out.fill_(float("nan"))  # poison: an unwritten element fails the check
        o = fn()
        torch.cuda.synchronize()
        got = o.reshape(B * H, S, D)[:CHECK_HEADS].double()
        return ((got - ref).norm() / ref.norm()).item()
    return rel_err


def refused(error: Exception):
    """A candidate that cannot run: calling it raises ``error``."""
    def fn():
        raise error
    return fn


def candidate(name, D, causal, q, k, v, out):
    """(fn, row fields) of one of our variants, as ``parse_variant`` reads its name; a name
    that cannot run at this shape gives a fn that raises (the row records why)."""
    from kernels import plans
    from kernels.attention import attention, config, host

    unplanned = "+unplanned" in name
    try:
        base, tile = split_tile(name)
        variant, st, sm, pers = parse_variant(base)
        ran_tile, ran_pers = host.launch_defaults(variant, D, q.shape[2], causal, tile=tile,
                                                  stages=st, softmax=sm, persistent=pers)
        cfg = config(variant, D, causal, st, ran_tile)
        fields = {"stages": cfg.stages, "tile": [cfg.BM, cfg.BN]}
    except ValueError as e:
        return refused(e), {}
    if sm is not None:
        fields["softmax"] = list(sm)
    fields["persistent"] = ran_pers if ran_pers == "pairs" else bool(ran_pers)
    fields["planned"] = not unplanned

    def fn():
        with plans.unplanned() if unplanned else contextlib.nullcontext():
            return attention(q, k, v, causal=causal, variant=variant, stages=st, out=out,
                             softmax=sm, persistent=pers, tile=tile)
    return fn, fields


def one_setting(B, H, S, D, causal, dtype, variants, gen, rows, rounds=5, clock_log=None,
                graph=False):
    import torch

    from kernels.attention import flops

    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
    ref = reference(q, k, v, causal)
    dname = str(dtype).removeprefix("torch.")
    out = torch.empty_like(q)
    cands = {p: (peer_fn(p, q, k, v, causal), {}) for p in PEERS}
    cands.update({n: candidate(n, D, causal, q, k, v, out) for n in variants})
    f = flops(B, H, S, D, causal)
    rows += check_then_time(cands, check(out, ref, B, H, S, D), TOL[dname], f,
                            {"B": B, "H": H, "S": S, "d": D, "causal": causal, "dtype": dname,
                             "flops": f, "timing": "cuda_graph" if graph else "do_bench"},
                            rounds, clock_log, graph)
    del q, k, v, ref, out, cands
    torch.cuda.empty_cache()


def write(env, rows, extra, out_dirs, suffix=""):
    """``<dir>/<gpu>-attention<suffix>.json`` (``--grid``: ``-attention-grid.json``, so the
    committed ladder stays)."""
    written = []
    for d in out_dirs:
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}-attention{suffix}.json"
        path.write_text(json.dumps({"attention": {"environment": env, "rows": rows, **extra}},
                                   indent=1) + "\n")
        written.append(path)
    return written


def print_table(rows):
    print("\nAttention fwd TFLOP/s (median over interleaved rounds [round min-max]; x = vs SDPA flash "
          "in the same run; SM clock during it; TFLOP per joule of board energy beside cuDNN's; "
          "! = failed)")
    keys = []
    for r in rows:
        key = (r["B"], r["H"], r["S"], r["d"], r["causal"], r["dtype"])
        if key not in keys:
            keys.append(key)
    for key in keys:
        rs = [r for r in rows if (r["B"], r["H"], r["S"], r["d"], r["causal"], r["dtype"]) == key]
        fl = next((r.get("tflops") for r in rs if r["variant"] == "sdpa_flash"), None)
        cudnn = next((r for r in rs if r["variant"] == "sdpa_cudnn" and r.get("ok")), None)
        print(f"B{key[0]} H{key[1]} S{key[2]} d{key[3]} {'causal' if key[4] else 'full'} {key[5]}")
        for r in rs:
            if not r["ok"]:
                why = r.get("error") or f"rel_err {r['rel_err']:.2e}"
                print(f"  {r['variant']:<12} !  {why}")
                continue
            x = f"{r['tflops'] / fl:5.2f}x" if fl else ""
            spread = f"[{r['tflops_min']:.0f}-{r['tflops_max']:.0f}]" if "tflops_min" in r else ""
            mhz = f"{r['sm_mhz']:.0f} MHz" if r.get("sm_mhz") else ""
            host = f"host {r['host_us']:.0f} us" if r.get("host_us") is not None else ""
            print(f"  {r['variant']:<15} {r['tflops']:7.1f} {spread:>11} {x}  {r['ms']:.3f} ms"
                  f"  {mhz}  {host}  {per_joule(r, cudnn, 'cuDNN')}  (rel_err {r['rel_err']:.1e})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instruments.bench_attention")
    p.add_argument("--quick", action="store_true", help="headline non-causal only")
    p.add_argument("--sweep", action="store_true", help="part of FA3 fig. 5 (fa3 and peers)")
    p.add_argument("--grid", action="store_true",
                   help="the sweep's grid alone (d 64/128/256 x S 1K/4K/16K x causal, B·S 16K, "
                        "H·d 2048), every --variants entry beside the peers; no headline")
    p.add_argument("--headline-variants", default=None,
                   help="with --grid: also the headline (full and causal) for these variants")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--dims", default="64,128,256",
                   help="head dims of --sweep / --grid (comma-separated)")
    p.add_argument("--seqlens", default="1024,4096,16384",
                   help="sequence lengths of --sweep / --grid (comma-separated; B = 16K / S)")
    p.add_argument("--graph", action="store_true",
                   help="time CUDA-graph replays (no host path in the window, no L2 flush "
                        "between calls) instead of do_bench; writes *-attention-grid-graph.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, action="append", default=None)
    args = p.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    headline = [v for v in (args.headline_variants or "").split(",") if v]
    for name in variants + headline:
        try:
            parse_variant(split_tile(name)[0])
        except ValueError as e:
            p.error(str(e))
    if not set(args.dims.split(",")) <= {"64", "128", "256"}:
        p.error(f"--dims: head dims are 64, 128, 256; got {args.dims}")
    dims = [int(d) for d in args.dims.split(",")]
    seqlens = [int(x) for x in args.seqlens.split(",")]
    if not set(seqlens) <= {1024, 2048, 4096, 8192, 16384}:
        p.error(f"--seqlens: powers of two from 1024 to 16384 (B = 16384 / S); got {args.seqlens}")

    import torch

    env = gpu_environment()
    if env is None:
        return 2
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    rows: list[dict] = []
    extras = [e for e in EXTRAS if e.partition(":")[0] in variants]
    with ClockLog() as clock_log:
        head = variants
        if args.grid:
            head = headline
            extras = []
        for causal in (() if not head else (False,) if args.quick else (False, True)):
            one_setting(4, 16, 8448, 128, causal, torch.float16,
                        head + ([] if causal else extras), gen, rows, 5, clock_log, args.graph)
        # the sweep: fa3 alone (not fa3:s3); the grid: every variant asked for
        sweep_variants = variants if args.grid else [v for v in variants if v == "fa3"]
        if (args.sweep or args.grid) and sweep_variants:
            for D in dims:
                for S in seqlens:
                    for causal in (False, True):
                        one_setting(16384 // S, 2048 // D, S, D, causal, torch.float16,
                                    sweep_variants, gen, rows, 3, clock_log, args.graph)
    env["clocks_after"] = smi("clocks.sm,clocks.mem")
    env["power_field"] = clock_log.power_field
    extra = {"headline": "FA3 tab. 2: B 4, H 16, S 8448, d 128, fp16", "tolerance": TOL,
             "rounds": "5 headline, 3 sweep (interleaved, rotated order)",
             "check": f"float64 reference on the first {CHECK_HEADS} (batch, head) pairs",
             "written": now()}
    suffix = ("-grid" if args.grid else "") + ("-graph" if args.graph else "")
    for path in write(env, rows, extra, out_dirs(args.out), suffix):
        print(f"wrote {path}")
    print_table(rows)
    return 0 if all(r["ok"] for r in rows if r["variant"] not in PEERS) else 1


if __name__ == "__main__":
    sys.exit(main())
