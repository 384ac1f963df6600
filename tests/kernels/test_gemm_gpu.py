"""The Gluon GEMMs on a Hopper GPU: each variant against a float64 reference on fresh random
inputs (small, ragged and non-square shapes, fp16 and bf16), and a ConSan run of the
warp-specialized variants. Skipped without a Hopper GPU (tests/conftest.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
TOL = {torch.float16: 3e-3, torch.bfloat16: 1.5e-2}
CASES = [("sequential", None), ("pipelined", 2), ("pipelined", 3), ("pipelined", 4), ("ws", 2),
         ("ws", 3), ("ws_pingpong", 2), ("ws_pingpong", 3), ("ws_pingpong", 4)]
SHAPES = [(8, 8, 8), (64, 64, 64), (128, 256, 64), (200, 136, 72), (1000, 520, 264),
          (136, 1032, 1000), (1024, 1024, 1024), (2056, 3000, 520)]


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("variant,stages", CASES)
def test_matches_float64(variant, stages, dtype):
    from kernels import gemm

    gen = torch.Generator(device="cuda").manual_seed(hash((variant, stages)) % 2**31)
    for M, N, K in SHAPES:
        a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
        b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)  # poisoned
        gemm(a, b, variant=variant, stages=stages, out=out)
        ref = a.double() @ b.double()
        err = rel_err(out, ref)
        assert err < TOL[dtype], f"{variant} s{stages} {M}x{N}x{K} {dtype}: rel err {err:.2e}"


@pytest.mark.parametrize("variant", ["ws", "ws_pingpong"])
def test_grid_per_tile_matches(variant):
    """persistent=False launches one CTA per tile with the same code: same answer."""
    from kernels import gemm

    a = torch.randn(1000, 1040, device="cuda", dtype=torch.float16)
    b = torch.randn(1040, 2056, device="cuda", dtype=torch.float16)
    ref = a.double() @ b.double()
    for persistent in (True, False):
        out = gemm(a, b, variant=variant, persistent=persistent)
        assert rel_err(out, ref) < TOL[torch.float16]


@pytest.mark.parametrize("tile", [None, (128, 128, 64)], ids=["192x128", "128x128"])
def test_more_tiles_than_sms_odd_count(tile):
    """An odd number of tiles per CTA: pingpong's consumer 0 gets one more than consumer 1."""
    from kernels import gemm
    from kernels.gemm import config

    cfg = config("ws_pingpong", tile=tile)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, N = cfg.BM * (2 * sms + 1), cfg.BN  # 2*SMs+1 tiles
    a = torch.randn(M, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, N, device="cuda", dtype=torch.float16)
    out = gemm(a, b, variant="ws_pingpong", tile=tile)
    assert rel_err(out, a.double() @ b.double()) < TOL[torch.float16]


@pytest.mark.parametrize("tile", [(128, 128, 64), (64, 256, 64)])
def test_pingpong_other_row_blocks(tile):
    """The same pingpong code with 2 row blocks (128 x 128) and 1 (64 x 256)."""
    from kernels import gemm

    gen = torch.Generator(device="cuda").manual_seed(7)
    for M, N, K in SHAPES[3:6]:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=gen)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        gemm(a, b, variant="ws_pingpong", out=out, tile=tile)
        assert rel_err(out, a.double() @ b.double()) < TOL[torch.float16], (tile, M, N, K)


def test_wrong_device_raises():
    from kernels import gemm

    with pytest.raises(ValueError, match="CUDA device"):
        gemm(torch.randn(64, 64).half(), torch.randn(64, 64, device="cuda").half())


CONSAN_SCRIPT = textwrap.dedent("""
    import torch, triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    from kernels import gemm
    # Depth 2: the protocol (ring, turns, row blocks) is the same at every depth, and ConSan's
    # compile time grows with the buffers it tracks (192 x 128 pingpong: s2 77 s, s4 > 100 s).
    for variant, stages in (("ws", 2), ("ws_pingpong", 2)):
        for M, N, K in ((256, 512, 320), (392, 264, 136)):
            a = torch.randn(M, K, device="cuda", dtype=torch.float16)
            b = torch.randn(K, N, device="cuda", dtype=torch.float16)
            out = gemm(a, b, variant=variant, stages=stages)
            torch.cuda.synchronize()
            ref = a.double() @ b.double()
            err = ((out.double() - ref).norm() / ref.norm()).item()
            assert err < 3e-3, (variant, M, N, K, err)
            print(variant, stages, M, N, K, "ok", err)
""")


def test_consan_ws_variants(tmp_path):
    """Triton's concurrency sanitizer (ConSan) instruments the mbarrier/TMA/wgmma protocol and
    traps on a race or a missing wait; the run must finish clean and correct."""
    env = dict(os.environ, TRITON_INSTRUMENTATION_MODE="consan",
               TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CONSAN_SCRIPT], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=540, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" ok ") == 4


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_auto_and_groups_match_float64(dtype):
    """variant="auto" (whatever it picks) and the wider L2 groups, on small, ragged and
    short-K shapes: the group changes only the order tiles are visited in."""
    from kernels import gemm

    gen = torch.Generator(device="cuda").manual_seed(23)
    for M, N, K in ((200, 136, 72), (1000, 520, 264), (2056, 3000, 520), (4096, 1024, 2048)):
        a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
        b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
        ref = a.double() @ b.double()
        runs = [{"variant": "auto"}] + [{"variant": v, "group_m": g}
                                        for v in ("ws", "ws_pingpong") for g in (1, 16, 32)]
        for kw in runs:
            out = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
            gemm(a, b, out=out, **kw)
            err = rel_err(out, ref)
            assert err < TOL[dtype], f"{kw} {M}x{N}x{K} {dtype}: rel err {err:.2e}"
