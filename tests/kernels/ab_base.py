"""A/B on a Hopper GPU: this tree's attention kernels against another tree's, in one process,
interleaved, beside cuDNN (for a change whose SASS ``sass_builds.py`` shows is not identical).

    python tests/kernels/ab_base.py BASE_DIR [--rounds 7] [--dims 64,128,256] [--out DIR]
    python tests/kernels/ab_base.py BASE_DIR --seqlens 1024,4096 [--causal-only] ...
    python tests/kernels/ab_base.py BASE_DIR --gemm pipelined [--rounds 7] [--out DIR]

``BASE_DIR/kernels`` is the other tree's kernels package (``git archive <commit> kernels
sim/tiles.json | tar -x -C BASE_DIR``; without its tile table, this tree's is used); it is
imported as ``kernels_base`` (its imports are relative). For each head dim, non-causal and
causal, at FA3 tab. 2's B 4, H 16, S 8448: ``fa3`` and ``fa3`` persistent of both trees and
SDPA's cuDNN backend, each checked against float64 first, then timed in interleaved rounds
(``instruments.harness.interleaved``). ``--seqlens``: the attention grid's shapes instead (B·S
16K, H·d 2048, ``instruments.bench_attention --grid``), ``fa3`` at its default launch (the
launcher's rule: persistent or not, the tile) of both trees. Prints each side's TFLOP/s and its
ratio to the base tree and to cuDNN; writes ``ab_base.json`` into ``--out`` (or ``$OUT``).
``--gemm VARIANT``: the GEMM of that name instead, at each ring depth it offers, fp16 and bf16,
at 8192³ and a short K (8192×8192×1024, where a tile's start weighs most), beside cuBLAS.
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

B, H, S = 4, 16, 8448  # FA3 tab. 2's setting


def load_base(base: Path, package: str = "attention"):
    """The other tree's ``kernels.<package>``, as ``kernels_base.<package>``."""
    pkg = Path(tempfile.mkdtemp(prefix="ab-base-"))
    shutil.copytree(base / "kernels", pkg / "kernels_base")
    # the tile table the kernels read beside them (kernels/tiles.py): the base tree's, else ours
    tiles = base / "sim" / "tiles.json"
    (pkg / "sim").mkdir()
    shutil.copy(tiles if tiles.exists() else ROOT / "sim" / "tiles.json", pkg / "sim")
    sys.path.insert(0, str(pkg))
    return importlib.import_module(f"kernels_base.{package}")


GEMM_SHAPES = ((8192, 8192, 8192), (8192, 8192, 1024))


def gemm_ab(base_dir: Path, variant: str, rounds: int, clocks) -> list[dict]:
    """``variant`` of this tree and the base tree at each ring depth, beside cuBLAS."""
    import torch

    from instruments.bench import GEMM_TOL, gemm_check
    from instruments.harness import interleaved

    new = importlib.import_module("kernels.gemm")   # the package (`kernels.gemm` is also a function)
    base = load_base(base_dir, "gemm")
    depths = importlib.import_module(f"kernels.gemm.{variant}").STAGES_ALLOWED
    gen, rows = torch.Generator(device="cuda").manual_seed(0), []
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K in GEMM_SHAPES:
            a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
            b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
            ref, tol = a.double() @ b.double(), GEMM_TOL[str(dtype).removeprefix("torch.")]
            fns = {"cublas": lambda: torch.matmul(a, b)}
            for s in depths:
                for side, mod in (("", new), (" base", base)):
                    out = torch.empty(M, N, device="cuda", dtype=dtype)
                    fn = lambda m=mod, s=s, o=out: m.gemm(a, b, variant, s, out=o)
                    err = gemm_check(out, ref)(fn)
                    if not err < tol:
                        raise AssertionError(f"{variant} s{s}{side} {M}x{N}x{K}: rel_err {err:.2e}")
                    fns[f"{variant} s{s}{side}"] = fn
            del ref
            timed = interleaved(fns, dict.fromkeys(fns, 2.0 * M * N * K), rounds, clocks)
            for name, t in timed.items():
                rows.append({"shape": [M, N, K], "dtype": str(dtype), "side": name, **t})
                if name.endswith(" base") or name == "cublas":
                    continue
                vs_base = t["tflops"] / timed[name + " base"]["tflops"]
                vs_cublas = t["tflops"] / timed["cublas"]["tflops"]
                print(f"{M}x{N}x{K} {str(dtype)[6:]:9s} {name:16s} {t['tflops']:7.1f} TFLOP/s  "
                      f"vs base {vs_base:6.3f}  vs cuBLAS {vs_cublas:6.3f}", flush=True)
    return rows


def settings(dims: str, seqlens: str | None = None, causal_only: bool = False) -> list:
    """(d, (B, H, S), causal) of each attention setting: FA3 tab. 2's shape at each head dim, or
    with ``seqlens`` the grid's (B = 16K / S, H = 2048 / d); non-causal first unless
    ``causal_only``."""
    def shapes(d):
        if not seqlens:
            return [(B, H, S)]
        return [(16384 // s, 2048 // d, s) for s in map(int, seqlens.split(","))]
    return [(d, shape, causal) for d in map(int, dims.split(",")) for shape in shapes(d)
            for causal in (False, True) if causal or not causal_only]


def main(argv=None) -> int:
    import torch

    from instruments.harness import ClockLog, environment, interleaved, rel_error
    from instruments.bench_attention import TOL, peer_fn, reference
    from kernels import attention as new

    p = argparse.ArgumentParser(prog="python tests/kernels/ab_base.py")
    p.add_argument("base", type=Path)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--dims", default="64,128,256")
    p.add_argument("--out", type=Path, default=os.environ.get("OUT"))
    p.add_argument("--gemm", metavar="VARIANT", help="A/B this GEMM schedule instead")
    p.add_argument("--seqlens", help="the grid's shapes at these S (B = 16K / S, H = 2048 / d)")
    p.add_argument("--causal-only", action="store_true", help="skip the non-causal settings")
    a = p.parse_args(argv)
    if a.gemm:
        with ClockLog() as clocks:
            rows = gemm_ab(a.base, a.gemm, a.rounds, clocks)
        if a.out:
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / "ab_base_gemm.json").write_text(json.dumps(
                {"environment": environment(), "variant": a.gemm, "rows": rows}, indent=1))
        return 0
    base = load_base(a.base)
    if a.seqlens:  # the default launch (persistent=None: the launcher's rule) of each tree
        sides = {"fa3": (new, None), "fa3 base": (base, None)}
    else:
        sides = {"fa3": (new, False), "fa3 base": (base, False),
                 "fa3 persistent": (new, True), "fa3 persistent base": (base, True)}
    rows = []
    with ClockLog() as clocks:
        gen = torch.Generator(device="cuda").manual_seed(0)
        for d, (b, h, s), causal in settings(a.dims, a.seqlens, a.causal_only):
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16,
                                   generator=gen) for _ in range(3))
            ref = reference(q, k, v, causal)
            fns = {}
            for name, (mod, pers) in sides.items():
                out = torch.full_like(q, float("nan"))
                fn = lambda m=mod, ps=pers, o=out: m.attention(q, k, v, causal=causal,
                                                                variant="fa3", out=o,
                                                                persistent=ps)
                fn()
                torch.cuda.synchronize()
                err = rel_error(out.reshape(b * h, s, d)[:ref.shape[0]], ref)
                if not err < TOL["float16"]:
                    raise AssertionError(f"{name} d {d} causal={causal}: rel_err {err:.2e}")
                fns[name] = fn
            fns["sdpa_cudnn"] = peer_fn("sdpa_cudnn", q, k, v, causal)
            f = new.flops(b, h, s, d, causal)
            timed = interleaved(fns, dict.fromkeys(fns, f), a.rounds, clocks)
            for name, t in timed.items():
                rows.append({"B": b, "H": h, "S": s, "d": d, "causal": causal, "side": name, **t})
            cudnn = timed["sdpa_cudnn"]["tflops"]
            for name in sides:
                t = timed[name]["tflops"]
                vs_base = t / timed[name + " base"]["tflops"] if name + " base" in sides else 1
                print(f"d {d:3d} S {s:5d} {'causal' if causal else 'full  '} {name:20s} "
                      f"{t:7.1f} TFLOP/s  vs base {vs_base:6.3f}  vs cuDNN {t / cudnn:6.3f}",
                      flush=True)
            del q, k, v, ref
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        shape = {"seqlens": a.seqlens} if a.seqlens else {"B": B, "H": H, "S": S}
        (a.out / "ab_base.json").write_text(json.dumps({"environment": environment(), **shape,
                                                        "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
