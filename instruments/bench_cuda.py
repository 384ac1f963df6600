"""The CUDA twins beside the Gluon kernels and the vendor peers, **in the same run**:
``python -m instruments.bench_cuda [--quick] [--gemm | --tiles [--dims D ...]] [--out DIR]``.

GEMM (8192^3 fp16 and bf16, and a ragged 8000x8008x4104 fp16): cuBLAS (torch.matmul), Gluon
``ws`` and ``ws_pingpong``, CUDA ``ws`` (3 and 2 stages, and the 3-stage ablations
``cuda_ws_s3_stsm`` / ``cuda_ws_s3_lockstep`` / ``cuda_ws_s3_l2_128``, kernels.cuda.GEMM_ABLATIONS) and ``ws_pingpong``
(4 and 5 stages); ``--gemm``: these only, no attention. Attention (FA3 tab. 2's setting: B 4,
H 16, S 8448, d 128; fp16 full and causal, bf16 full): SDPA flash (FA2) and cuDNN, Gluon ``fa3``,
CUDA ``fa3`` (128x128) and ``fa3_128x176`` (FA3's own tile, kernels.cuda.FA3_TILES), and both again
with FA4's conditional rescaling (``cuda_fa3_cond``, ``cuda_fa3_128x176_cond``;
``cuda.attention(..., cond_rescale=True)``). ``--tiles``:
instead of all that, the grid of ``bench_attention --grid`` (d 64/128/256 x S 1K/4K/16K x full/
causal, B·S 16K, H·d 2048, fp16) with the peers, Gluon ``fa3`` and the CUDA twin at every tile
of kernels.cuda.ATTENTION_TILES (``cuda_fa3_<bm>x<bn>``: FA3's 192x128, 128x176, 128x80 and
128x128, 128x64; ``..._cond`` beside each at kernels.cuda.COND_RESCALE_DIMS) and its persistent
launch at every tile of kernels.cuda.PERSISTENT_TILES (``cuda_fa3_<bm>x<bn>_persistent``; causal:
the tiles in pairs, as the Gluon fa3 runs them by default at S 1K-4K), into
``<gpu>-cuda-tiles.json`` (``--dims 128``: that head dim only, into
``<gpu>-cuda-tiles-d128.json``); the model's prediction for it is in results/lab-notebook.md,
"FA3's own tiles: the model's prediction before any kernel exists".
Each is checked against a float64 reference on a poisoned output first, then timed
(``instruments.harness.check_then_time``: do_bench medians in rotated rounds, SM clock and board
power logged: the boost clock favours whatever runs first). Writes ``<gpu>-cuda.json`` into
results and ``$OUT``; prints a table last, TFLOP per joule beside cuBLAS's / cuDNN's.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from instruments.bench import GEMM_TOL, gemm_check
from instruments.harness import (ClockLog, check_then_time, gpu_environment, gpu_slug, now, out_dirs,
                                 per_joule, smi)


def gemm_setting(M, N, K, dtype, gen, rows, rounds, clock_log, gluon=("ws", "ws_pingpong")):
    import torch

    from kernels import cuda
    from kernels.gemm import gemm

    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
    ref = a.double() @ b.double()
    dname = str(dtype).removeprefix("torch.")
    out = torch.empty(M, N, device="cuda", dtype=dtype)
    cands = {"cublas": lambda: torch.matmul(a, b, out=out)}
    for v in gluon:
        cands[f"gluon_{v}"] = lambda v=v: gemm(a, b, variant=v, out=out)
    for v in cuda.GEMM_VARIANTS:
        for s in cuda.GEMM_STAGES[v]:
            cands[f"cuda_{v}_s{s}"] = lambda v=v, s=s: cuda.gemm(a, b, v, stages=s, out=out)
            if (v, s) == ("ws", 3):  # the ws GEMM's ablations (one feature off each), same rounds
                for abl in (x for x in cuda.GEMM_ABLATIONS if x):
                    cands[f"cuda_ws_s3_{abl}"] = lambda abl=abl: cuda.gemm(a, b, out=out,
                                                                           ablation=abl)
    rows += check_then_time({n: (fn, {}) for n, fn in cands.items()}, gemm_check(out, ref),
                            GEMM_TOL[dname],
                            2.0 * M * N * K, {"M": M, "N": N, "K": K, "dtype": dname}, rounds,
                            clock_log)
    cands.clear()


def twin_tiles(D: int, tiles, prefix: str = "cuda_fa3") -> dict:
    """{name: ((bm, bn), cond_rescale)}: each of ``tiles`` ({suffix: (bm, bn)}) as
    ``<prefix><suffix>``, and with FA4's conditional rescaling as ``..._cond`` where the twin is
    built with it (kernels.cuda.COND_RESCALE_DIMS)."""
    from kernels import cuda

    conds = (False, True) if D in cuda.COND_RESCALE_DIMS else (False,)
    return {f"{prefix}{suffix}{'_cond' if cond else ''}": (tile, cond)
            for cond in conds for suffix, tile in tiles.items()}


def persistent_twins(D: int, prefix: str = "cuda_fa3") -> dict:
    """{name: (bm, bn)}: the twin's persistent launch at each tile of
    kernels.cuda.PERSISTENT_TILES[D], as ``<prefix>_<bm>x<bn>_persistent``."""
    from kernels import cuda

    return {f"{prefix}_{bm}x{bn}_persistent": (bm, bn) for bm, bn in cuda.PERSISTENT_TILES[D]}


def attention_setting(B, H, S, causal, dtype, gen, rows, rounds, clock_log, D=128, tiles=None,
                      persistent=None):
    """One attention setting; ``tiles``: the CUDA twin's instances to time, {name: ((bm, bn),
    cond_rescale)} (default: cuda_fa3 = 128x128 and cuda_fa3_128x176, d 128, each also with
    conditional rescaling); ``persistent``: more, launched persistent, {name: (bm, bn)}."""
    import torch

    from instruments.bench_attention import PEERS, TOL, check, peer_fn, reference
    from kernels import cuda
    from kernels.attention import attention, flops

    if tiles is None:
        tiles = twin_tiles(128, {"": (128, 128), "_128x176": cuda.FA3_TILES[128]})
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
    ref = reference(q, k, v, causal)
    f = flops(B, H, S, D, causal)
    dname = str(dtype).removeprefix("torch.")
    out = torch.empty_like(q)
    cands = {p: peer_fn(p, q, k, v, causal) for p in PEERS}
    cands["gluon_fa3"] = lambda: attention(q, k, v, causal=causal, variant="fa3", out=out)
    for name, (tile, cond) in tiles.items():
        cands[name] = lambda tile=tile, cond=cond: cuda.attention(q, k, v, causal=causal, out=out,
                                                                  tile=tile, cond_rescale=cond)
    for name, tile in (persistent or {}).items():
        cands[name] = lambda tile=tile: cuda.attention(q, k, v, causal=causal, out=out, tile=tile,
                                                       persistent=True)
    rows += check_then_time({n: (fn, {}) for n, fn in cands.items()},
                            check(out, ref, B, H, S, D), TOL[dname], f,
                            {"B": B, "H": H, "S": S, "d": D, "causal": causal, "dtype": dname,
                             "flops": f}, rounds, clock_log)
    cands.clear()


def print_table(gemm_rows, attn_rows):
    print("\nTFLOP/s (median over interleaved rounds [round min-max]; x = vs the first peer in "
          "the same run: cuBLAS / SDPA flash; SM MHz during it; TFLOP per joule of board energy "
          "beside cuBLAS's / cuDNN's; ! = failed)")
    for rows, keyf, peer, energy_peer in (
            (gemm_rows, lambda r: f"GEMM {r['M']}x{r['N']}x{r['K']} {r['dtype']}", "cublas",
             ("cublas", "cuBLAS")),
            (attn_rows, lambda r: f"attention B{r['B']} H{r['H']} S{r['S']} d{r['d']} "
             f"{'causal' if r['causal'] else 'full'} {r['dtype']}", "sdpa_flash",
             ("sdpa_cudnn", "cuDNN"))):
        keys = list(dict.fromkeys(keyf(r) for r in rows))
        for key in keys:
            rs = [r for r in rows if keyf(r) == key]
            base = next((r.get("tflops") for r in rs if r["variant"] == peer), None)
            joule_peer = next((r for r in rs if r["variant"] == energy_peer[0] and r.get("ok")),
                              None)
            print(key)
            for r in rs:
                if not r.get("ok"):
                    why = r.get("error") or f"rel_err {r['rel_err']:.2e}"
                    print(f"  {r['variant']:<22} !  {why}")
                    continue
                x = f"{r['tflops'] / base:5.2f}x" if base else ""
                mhz = f"{r['sm_mhz']:.0f} MHz" if r.get("sm_mhz") else ""
                print(f"  {r['variant']:<22} {r['tflops']:7.1f} [{r['tflops_min']:.0f}-"
                      f"{r['tflops_max']:.0f}] {x} {r['ms']:.3f} ms {mhz} "
                      f"{per_joule(r, joule_peer, energy_peer[1])} (rel_err {r['rel_err']:.1e})")


def tiles_grid(args, env, gen) -> int:
    """``--tiles``: the grid with every tile of the CUDA twin beside the peers and Gluon fa3."""
    import torch

    from kernels import cuda

    rounds = 3
    a_rows: list[dict] = []
    Ss = (1024, 4096) if args.quick else (1024, 4096, 16384)
    dims = [D for D in cuda.ATTENTION_TILES if not args.dims or D in args.dims]
    with ClockLog() as clock_log:
        for D in dims:
            tiles = cuda.ATTENTION_TILES[D]
            named = twin_tiles(D, {f"_{bm}x{bn}": (bm, bn) for bm, bn in tiles})
            for S in Ss:
                for causal in (False, True):
                    attention_setting(16384 // S, 2048 // D, S, causal, torch.float16, gen,
                                      a_rows, rounds, clock_log, D=D, tiles=named,
                                      persistent=persistent_twins(D))
    env["clocks_after"] = smi("clocks.sm,clocks.mem")
    env["power_field"] = clock_log.power_field
    written = now()
    data = {"attention": {"environment": env, "rows": a_rows,
                          "grid": f"B·S 16K, H·d 2048, d {'/'.join(map(str, dims))}, "
                                  f"S {'/'.join(f'{S // 1024}K' for S in Ss)}, fp16",
                          "fa3_tiles": {str(d): t for d, t in cuda.FA3_TILES.items()},
                          "check": "float64 reference on the first 2 (batch, head) pairs",
                          "written": written},
            "rounds": rounds}
    for d in out_dirs(args.out):
        d.mkdir(parents=True, exist_ok=True)
        part = "".join(f"-d{x}" for x in sorted(args.dims or ()))  # not the whole grid's file
        path = d / f"{gpu_slug(env['gpu'])}-cuda-tiles{part}.json"
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")
    print_table([], a_rows)
    return 0 if all(r.get("ok") for r in a_rows) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instruments.bench_cuda")
    p.add_argument("--quick", action="store_true", help="fp16 headline sizes only, 3 rounds")
    p.add_argument("--gemm", action="store_true", help="GEMM settings only (no attention)")
    p.add_argument("--tiles", action="store_true",
                   help="only the attention grid (d 64/128/256 x S 1K/4K/16K x causal, fp16) "
                        "with the CUDA twin at every tile of kernels.cuda.ATTENTION_TILES and "
                        "persistent at kernels.cuda.PERSISTENT_TILES")
    p.add_argument("--dims", type=int, nargs="+", choices=(64, 128, 256), default=None,
                   help="--tiles: these head dims only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, action="append", default=None)
    args = p.parse_args(argv)

    import torch

    env = gpu_environment()
    if env is None:
        return 2
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    rounds = 3 if args.quick else 5
    g_rows: list[dict] = []
    a_rows: list[dict] = []
    if args.tiles:
        return tiles_grid(args, env, gen)
    with ClockLog() as clock_log:
        for dtype in (torch.float16,) if args.quick else (torch.float16, torch.bfloat16):
            gemm_setting(8192, 8192, 8192, dtype, gen, g_rows, rounds, clock_log)
        if not args.quick:
            gemm_setting(8000, 8008, 4104, torch.float16, gen, g_rows, rounds, clock_log,
                         gluon=("ws",))
        settings = [] if args.gemm else [(False, torch.float16), (True, torch.float16)]
        if not (args.quick or args.gemm):
            settings.append((False, torch.bfloat16))
        for causal, dtype in settings:
            attention_setting(4, 16, 8448, causal, dtype, gen, a_rows, rounds, clock_log)
    env["clocks_after"] = smi("clocks.sm,clocks.mem")
    env["power_field"] = clock_log.power_field
    written = now()
    data = {"gemm": {"environment": env, "rows": g_rows, "tolerance": GEMM_TOL,
                     "written": written},
            "attention": {"environment": env, "rows": a_rows,
                          "headline": "FA3 tab. 2: B 4, H 16, S 8448, d 128",
                          "check": "float64 reference on the first 2 (batch, head) pairs",
                          "written": written},
            "rounds": rounds}
    for d in out_dirs(args.out):
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}-cuda.json"
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")
    print_table(g_rows, a_rows)
    return 0 if all(r.get("ok") for r in g_rows + a_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
