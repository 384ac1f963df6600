"""The CUDA fa3 twin's persistent launch (``cuda.attention(..., persistent=True)``; causal: the
tiles in pairs) at every tile of kernels.cuda.PERSISTENT_TILES, on a Hopper GPU: against a
float64 reference on fresh random inputs with poisoned outputs (S = 1, ragged S, an odd number
of Q tiles a head, whose middle causal tile has no pair), with the device's grid and with a few
CTAs (``sms=``) so that each walks many tiles and its ring and barrier phases wrap many times;
and bit-identical to the plain twin at the same tile (the same arithmetic, row by row).
Skipped without a Hopper GPU (tests/conftest.py). The CPU side:
tests/kernels/test_cuda_persistent_compile.py."""
from __future__ import annotations

import math

import pytest

from instruments.harness import attention_reference, rel_error

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

ATTN_TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2}
LSE_TOL = 2e-3
TILES = [(64, 128, 128), (64, 192, 128), (128, 128, 128), (256, 128, 80), (256, 128, 64)]
IDS = [f"d{d}-{bm}x{bn}" for d, bm, bn in TILES]
# (B, H, S): one block; S ragged around 1K (1000, 1100: n_m odd at BM 128) and a multiple of
# 128 (1024); 4096; many heads, so that a CTA walks many tiles
SHAPES = ((1, 1, 1), (2, 3, 1000), (1, 4, 1024), (1, 3, 1100), (1, 1, 4096), (3, 100, 300))
SMS = (None, 7)  # the device's SMs; 7 CTAs (odd: pairs and rounds do not divide evenly)


@pytest.mark.parametrize("d,bm,bn", TILES, ids=IDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_persistent_matches_float64(dtype, causal, d, bm, bn):
    from kernels import cuda

    gen = torch.Generator(device="cuda").manual_seed(23 + d + bm + bn + causal)
    for B, H, S in SHAPES:
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        ref, ref_lse = attention_reference(q, k, v, causal, 1 / math.sqrt(d))
        for sms in SMS:
            out = torch.full_like(q, float("nan"))  # poisoned: an unwritten row fails
            o, lse = cuda.attention(q, k, v, causal=causal, return_lse=True, out=out,
                                    tile=(bm, bn), persistent=True, sms=sms)
            what = f"d {d} {bm}x{bn} {(B, H, S)} causal={causal} {dtype} sms={sms}"
            assert not torch.isnan(o).any(), f"{what}: NaN in O"
            err = rel_error(o, ref)
            lse_err = (lse.double() - ref_lse).abs().max().item()
            assert err < ATTN_TOL[dtype], f"{what}: rel err {err:.2e}"
            assert lse_err < LSE_TOL, f"{what}: LSE err {lse_err:.2e}"


@pytest.mark.parametrize("d,bm,bn", TILES, ids=IDS)
def test_persistent_is_bit_identical_to_plain(d, bm, bn):
    """Each row's sums run in the same order in both launches (the same blocks, the same steps;
    only the tile order and the turns differ), so O and the LSE agree bit for bit; and the same
    inputs twice give the same bits (a race on q_empty or the ring would move them)."""
    from kernels import cuda

    gen = torch.Generator(device="cuda").manual_seed(5 + d + bn)
    for B, H, S in ((2, 3, 1000), (1, 4, 1024), (3, 100, 300), (1, 2, 4096)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
                   for _ in range(3))
        for causal in (False, True):
            o, lse = cuda.attention(q, k, v, causal=causal, return_lse=True, tile=(bm, bn))
            for sms in SMS:
                po, plse = cuda.attention(q, k, v, causal=causal, return_lse=True,
                                          tile=(bm, bn), persistent=True, sms=sms)
                what = (d, bm, bn, (B, H, S), causal, sms)
                assert torch.equal(po, o), what
                assert torch.equal(plse, lse), what


def test_persistent_grid_larger_than_the_tiles():
    """sms above the tile count: the grid is the tile count (one tile a CTA, no idle CTA);
    causal with one Q tile a head, every pair a single tile."""
    from kernels import cuda

    q, k, v = (torch.randn(1, 3, 100, 128, device="cuda", dtype=torch.float16)
               for _ in range(3))
    for causal in (False, True):
        ref, _ = attention_reference(q, k, v, causal, 1 / math.sqrt(128))
        o = cuda.attention(q, k, v, causal=causal, persistent=True, sms=1000)
        assert rel_error(o, ref) < ATTN_TOL[torch.float16], causal
