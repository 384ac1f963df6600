"""The GEMM benchmark: ``python -m instruments.bench gemm|gemm_probe|gemm_shapes|micro [--quick]
[--out DIR]`` (``gemm_shapes [--explore]``: ``variant="auto"`` beside cuBLAS at 8192³,
6144³, 4096³, 8192×8192×2048 and 16384×4096×4096, fp16 and bf16; ``micro``: the
microbenchmarks of ``instruments/micro``).

Our Gluon GEMMs and cuBLAS (torch.matmul) on the same fresh random inputs, each checked against
a float64 reference on a poisoned output, then timed together in interleaved rounds with the SM
clock and board power logged (``instruments/harness.py`` says why and how). Results go to
``results/<gpu>.json`` (and ``$OUT`` if set): GPU name, clocks read from nvidia-smi,
torch/triton/CUDA versions, date, the raw numbers. The last thing printed is a short table, each
row's TFLOP/s and TFLOP per joule beside cuBLAS's.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from records import RESULTS

from .harness import (ClockLog, check_then_time, gpu_environment, gpu_slug, out_dirs, per_joule,
                      rel_error, smi, write_results)


# ------------------------------------------------------------------------------------ gemm
GEMM_TOL = {"float16": 3e-3, "bfloat16": 1.5e-2}
PINGPONG_128 = (128, 128, 64)  # the square pingpong tile, for comparison: 64 FLOP per operand byte


def gemm_configs(quick: bool) -> list[tuple]:
    """(variant, stages, persistent[, tile]) to time at the headline size; None = default."""
    if quick:
        return [("sequential", None, None), ("pipelined", None, None), ("ws", None, None),
                ("ws_pingpong", None, None)]
    return [("sequential", 1, None),
            ("pipelined", 2, None), ("pipelined", 3, None), ("pipelined", 4, None),
            ("ws", 2, True), ("ws", 3, True), ("ws", 3, False),
            ("ws_pingpong", 2, True), ("ws_pingpong", 3, True), ("ws_pingpong", 4, True),
            ("ws_pingpong", 4, False),
            ("ws", 3, True, (256, 128, 64)), ("ws_pingpong", 4, True, PINGPONG_128)]


def gemm_check(out, ref):
    """``check_then_time``'s check for a GEMM: ``fn()`` into a poisoned ``out`` (an unwritten
    element fails), against the float64 ``ref``."""
    import torch

    def rel_err(fn) -> float:
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        return rel_error(out, ref)
    return rel_err


def gemm_rows(M, N, K, dtype, configs, gen, rounds: int = 5,
              clock_log: ClockLog | None = None) -> list[dict]:
    """Check, then time (``check_then_time``) cuBLAS and each (variant, stages,
    persistent[, tile[, group]]) on one fresh pair of random inputs."""
    import torch

    from kernels.gemm import auto as gemm_auto
    from kernels.gemm import config as gemm_config
    from kernels.gemm import gemm

    torch.cuda.empty_cache()  # the previous size's buffers are gone
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
    ref = a.double() @ b.double()
    dname = str(dtype).removeprefix("torch.")
    out = torch.empty(M, N, device="cuda", dtype=dtype)
    cands = {}
    for i, entry in enumerate([("cublas", None, None)] + list(configs)):
        variant, stages, persistent = entry[:3]
        tile = entry[3] if len(entry) > 3 else None
        group = entry[4] if len(entry) > 4 else None
        row = {"variant": variant}
        if variant == "cublas":
            fn = lambda: torch.matmul(a, b, out=out)
        elif variant == "auto":
            pick = gemm_auto.choose(M, N, K, dtype)
            cfg = gemm_config(pick.variant, pick.stages, None, pick.tile, pick.group_m)
            row.update(stages=cfg.stages, persistent=cfg.persistent, tile=[cfg.BM, cfg.BN, cfg.BK],
                       group_m=cfg.group_m, picked=pick.variant, why=pick.why)
            fn = lambda: gemm(a, b, "auto", out=out)
        else:
            cfg = gemm_config(variant, stages, persistent, tile, group)
            row.update(stages=cfg.stages, persistent=cfg.persistent, tile=[cfg.BM, cfg.BN, cfg.BK],
                       tile_override=tile is not None, group_m=cfg.group_m)
            fn = lambda v=variant, s=stages, p=persistent, t=tile, g=group: gemm(
                a, b, v, s, p, out=out, tile=t, group_m=g)
        cands[str(i)] = (fn, row)

    return check_then_time(cands, gemm_check(out, ref), GEMM_TOL[dname], 2.0 * M * N * K,
                           {"M": M, "N": N, "K": K, "dtype": dname}, rounds, clock_log)


def bench_gemm(args) -> tuple[list[dict], dict]:
    import torch

    headline = (8192, 8192, 8192)
    sweep = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (6144,) * 3,
             (8192, 8192, 2048), (2048, 2048, 8192), (8000, 8008, 4104), (3000, 5000, 1336),
             (8192, 4096, 16384), (8192, 8192, 1024), (16384, 16384, 1024)]
    if args.quick:
        sweep = [(1024,) * 3, (8000, 8008, 4104)]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        rows += gemm_rows(*headline, dtype, gemm_configs(args.quick), gen, rounds=5,
                          clock_log=args.clock_log)
    defaults = [(v, None, None) for v in ("sequential", "pipelined", "ws", "ws_pingpong")]
    for M, N, K in sweep:
        rows += gemm_rows(M, N, K, torch.float16, defaults, gen, rounds=3, clock_log=args.clock_log)
    return rows, {"headline": list(headline), "tolerance": GEMM_TOL, "rounds": "5 headline, 3 sweep"}


def bench_gemm_probe(args) -> tuple[list[dict], dict]:
    """Which pingpong tile: the 192 x 128 tile (three row
    blocks of 64) against the 128 x 128 one and against ``ws``, at the headline size and at the
    small K where the hidden epilogue is worth most, every row beside cuBLAS."""
    import torch

    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed + 2)
    headline = [("ws", 3, True), ("ws_pingpong", 4, True), ("ws_pingpong", 3, True),
                ("ws_pingpong", 4, True, PINGPONG_128)]
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        rows += gemm_rows(8192, 8192, 8192, dtype, headline, gen, rounds=5,
                          clock_log=args.clock_log)
    for M, N, K in ((8192, 8192, 1024), (8192, 8192, 2048), (16384, 16384, 1024),
                    (8000, 8008, 4104)):
        rows += gemm_rows(M, N, K, torch.float16, headline, gen, rounds=3,
                          clock_log=args.clock_log)
    return rows, {"tolerance": GEMM_TOL}


# The shapes `auto` is held to beside cuBLAS, fp16 and bf16 (h200.json's gemm_shapes)
AUTO_SHAPES = [(8192, 8192, 8192), (6144, 6144, 6144), (4096, 4096, 4096), (8192, 8192, 2048),
               (16384, 4096, 4096)]


def auto_explore_configs() -> list[tuple]:
    """The candidates the auto rule chooses among, at the L2 groups it could pick, and the
    nearest others (pipelined; pingpong with a 128-deep k-step; ws's tile turned)."""
    out = []
    for g in (8, 16, 32):
        out += [("ws", 3, True, None, g), ("ws_pingpong", 4, True, None, g)]
    out += [("pipelined", 3, None, None, 16), ("ws_pingpong", 2, True, (192, 128, 128), 16),
            ("ws", 3, True, (256, 128, 64), 16)]
    return out


def bench_gemm_shapes(args) -> tuple[list[dict], dict]:
    """``variant="auto"`` beside cuBLAS (and, with ``--explore``, beside the configurations it
    chooses among) at 8192³, 6144³, 4096³, 8192×8192×2048 and 16384×4096×4096, fp16 and bf16,
    in interleaved rounds."""
    import torch

    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed + 3)
    rounds = args.rounds or 5
    configs = [("auto", None, None)]
    if args.explore:
        configs += auto_explore_configs()
    else:
        configs += [("ws", 3, True), ("ws_pingpong", 4, True)]
    rows = []
    dtypes = (torch.float16,) if args.fp16_only else (torch.float16, torch.bfloat16)
    for dtype in dtypes:
        for M, N, K in AUTO_SHAPES:
            rows += gemm_rows(M, N, K, dtype, configs, gen, rounds=rounds, clock_log=args.clock_log)
    return rows, {"tolerance": GEMM_TOL, "rounds": rounds, "shapes": AUTO_SHAPES,
                  "explore": bool(args.explore)}


def print_gemm_table(rows: list[dict]) -> None:
    sizes = []
    for r in rows:
        key = (r["M"], r["N"], r["K"], r["dtype"])
        if key not in sizes:
            sizes.append(key)
    print("\nGEMM TFLOP/s (median over interleaved rounds of do_bench medians [round min-max]; "
          "x = fraction of cuBLAS in the same run; SM clock during it; TFLOP per joule of board "
          "energy beside cuBLAS's; ! = failed check)")
    for key in sizes:
        rs = [r for r in rows if (r["M"], r["N"], r["K"], r["dtype"]) == key]
        peer = next((r for r in rs if r["variant"] == "cublas" and r.get("ok")), None)
        cub = peer and peer.get("tflops")
        print(f"{key[0]}x{key[1]}x{key[2]} {key[3]}")
        for r in rs:
            name = r["variant"]
            if "stages" in r:
                name += f" s{r['stages']}" + ("" if r["variant"] in ("sequential", "pipelined")
                                              else (" pers" if r["persistent"] else " grid=tiles"))
                if r.get("tile_override") or r["variant"] == "auto":
                    name += " " + "x".join(map(str, r["tile"]))
                if r.get("group_m", 8) != 8:
                    name += f" g{r['group_m']}"
                if r["variant"] == "auto":
                    name = f"auto={r['picked']} s{r['stages']} " + name.split(" ", 3)[-1]
            if not r["ok"]:
                why = r.get("error") or f"rel_err {r['rel_err']:.2e}"
                print(f"  {name:<28} !  {why}")
                continue
            frac = f"{r['tflops'] / cub:5.2f}x" if cub else ""
            spread = f"[{r['tflops_min']:.0f}-{r['tflops_max']:.0f}]" if "tflops_min" in r else ""
            mhz = f" {r['sm_mhz']:.0f} MHz" if r.get("sm_mhz") else ""
            print(f"  {name:<28} {r['tflops']:7.1f} {spread:>11} {frac}{mhz}  "
                  f"{per_joule(r, peer, 'cuBLAS')}  (rel_err {r['rel_err']:.1e})")


# ------------------------------------------------------------------------------------ micro
def write_micro(env: dict, rows: list[dict], constants: dict,
                out_dirs: list[Path] | None = None) -> list[Path]:
    """``<dir>/<gpu>-micro.json``: {"micro": {"environment", "constants", "rows"}} (sim reads it)."""
    written = []
    for d in out_dirs or [RESULTS]:
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}-micro.json"
        data = {"micro": {"environment": env, "constants": constants, "rows": rows}}
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


def main_micro(args, env: dict) -> int:
    """The microbenchmarks of instruments/micro (see its README): rows + the model's constants."""
    from instruments.micro.run import bench_micro, print_table

    rows, constants = bench_micro(seed=args.seed, quick=args.quick)
    env["clocks_after"] = smi("clocks.sm,clocks.mem")
    for path in write_micro(env, rows, constants, out_dirs(args.out)):
        print(f"wrote {path}")
    print_table(rows, constants)
    return 0 if all(r.get("ok") for r in rows) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instruments.bench")
    p.add_argument("what", choices=["gemm", "gemm_probe", "gemm_shapes", "micro"],
                   help="which kernels to benchmark")
    p.add_argument("--quick", action="store_true", help="a few sizes and default configs only")
    p.add_argument("--explore", action="store_true",
                   help="gemm_shapes: also every configuration auto chooses among")
    p.add_argument("--fp16-only", action="store_true", help="gemm_shapes: fp16 only")
    p.add_argument("--rounds", type=int, default=None, help="gemm_shapes: interleaved rounds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, action="append", default=None,
                   help="directory for <gpu>.json (repeatable; default results and $OUT)")
    args = p.parse_args(argv)
    env = gpu_environment()
    if env is None:
        return 2
    if args.what == "micro":
        return main_micro(args, env)
    with ClockLog() as args.clock_log:
        rows, extra = {"gemm": bench_gemm, "gemm_probe": bench_gemm_probe,
                       "gemm_shapes": bench_gemm_shapes}[args.what](args)
    env["clocks_after"] = smi("clocks.sm,clocks.mem")
    env["power_field"] = args.clock_log.power_field
    for path in write_results(args.what, env, rows, extra, out_dirs(args.out)):
        print(f"wrote {path}")
    print_gemm_table(rows)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
