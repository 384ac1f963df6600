"""The CUDA fa3 twin at every tile of kernels.cuda.ATTENTION_TILES -- FA3's own 192x128 (d 64),
128x176 (d 128), 128x80 (d 256), and 128x128 (d 64), 128x64 (d 256) -- on a Hopper GPU against
a float64 reference, on fresh random inputs with poisoned outputs: S = 1, ragged S (S not a
multiple of BN: at 176 or 80 even S = 1024 leaves a partial last block), full and causal,
fp16/bf16, O and the LSE. Skipped without a Hopper GPU
(tests/conftest.py). The CPU side: tests/kernels/test_cuda_tiles_compile.py."""
from __future__ import annotations

import math

import pytest

from instruments.harness import attention_reference, rel_error

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

ATTN_TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2}
LSE_TOL = 2e-3
TILES = [(64, 192, 128), (64, 128, 128), (128, 128, 176), (256, 128, 80), (256, 128, 64)]
# one block, partial tiles, S a multiple of 128 but not of 176 or 80 (1024), of 176 (1056),
# many blocks and a tail; (B, H, S)
SHAPES = ((1, 1, 1), (1, 2, 77), (2, 3, 300), (1, 2, 1024), (1, 1, 1056), (2, 2, 1029),
          (1, 1, 2048))


@pytest.mark.parametrize("d,bm,bn", TILES, ids=[f"d{d}-{bm}x{bn}" for d, bm, bn in TILES])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_tile_matches_float64(dtype, causal, d, bm, bn):
    from kernels import cuda

    gen = torch.Generator(device="cuda").manual_seed(11 + d + bn + causal)
    for B, H, S in SHAPES:
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        out = torch.full_like(q, float("nan"))  # poisoned: an unwritten row fails
        o, lse = cuda.attention(q, k, v, causal=causal, return_lse=True, out=out,
                                tile=(bm, bn))
        ref, ref_lse = attention_reference(q, k, v, causal, 1 / math.sqrt(d))
        what = f"d {d} {bm}x{bn} {(B, H, S)} causal={causal} {dtype}"
        assert not torch.isnan(o).any(), f"{what}: NaN in O"
        err = rel_error(o, ref)
        lse_err = (lse.double() - ref_lse).abs().max().item()
        assert err < ATTN_TOL[dtype], f"{what}: rel err {err:.2e}"
        assert lse_err < LSE_TOL, f"{what}: LSE err {lse_err:.2e}"


@pytest.mark.parametrize("d,bm,bn", TILES, ids=[f"d{d}-{bm}x{bn}" for d, bm, bn in TILES])
def test_tile_large_inputs_and_repeatable(d, bm, bn):
    """Magnitude-10 inputs (scores in the thousands: the running max moves a lot) with another
    scale: no NaN, still right; and the same inputs twice give the same bits (a race in the
    turns -- three consumers at d 64 -- would move them)."""
    from kernels import cuda

    q, k, v = (10 * torch.randn(1, 2, 333, d, device="cuda", dtype=torch.float16)
               for _ in range(3))
    for causal in (False, True):
        o, lse = cuda.attention(q, k, v, causal=causal, scale=0.05, return_lse=True,
                                tile=(bm, bn))
        ref, ref_lse = attention_reference(q, k, v, causal, 0.05)
        assert not torch.isnan(o).any()
        assert rel_error(o, ref) < ATTN_TOL[torch.float16]
        assert (lse.double() - ref_lse).abs().max().item() < 5e-2  # |LSE| ~ 1e3 here
    q, k, v = (torch.randn(2, 4, 3000, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for causal in (False, True):
        a = cuda.attention(q, k, v, causal=causal, tile=(bm, bn))
        b = cuda.attention(q, k, v, causal=causal, tile=(bm, bn))
        assert torch.equal(a, b), (d, bm, bn, causal)


def test_fa3_tile_agrees_with_the_default_tile():
    """d 128: FA3's 128x176 and the measured 128x128 compute the same attention (to rounding:
    the blocks differ, so the order of the sums does)."""
    from kernels import cuda

    q, k, v = (torch.randn(2, 4, 1024, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        a = cuda.attention(q, k, v, causal=causal)
        b = cuda.attention(q, k, v, causal=causal, tile="fa3")
        assert rel_error(b, a.double()) < 2e-3, causal
