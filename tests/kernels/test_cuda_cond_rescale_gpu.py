"""The CUDA fa3 twin with FA4's conditional rescaling (``cuda.attention(..., cond_rescale=True)``,
kernels/cuda/attention.cuh: RESCALE_THRESHOLD) on a Hopper GPU against a float64 reference, at
every tile of its head dims (kernels.cuda.COND_RESCALE_DIMS): fresh random inputs (where no row's
max grows by 2^8 after its first block, so every warp skips O *= alpha), ragged S, S = 1, full
and causal, fp16/bf16, O and the LSE on poisoned outputs; inputs whose row max grows steadily
from block to block (by 3 per block in base 2: the stale max lags and is reset every third
block; by 12: every block rescales); and large scores (the max moves by thousands). Skipped
without a Hopper GPU (tests/conftest.py). The CPU side:
tests/kernels/test_cuda_cond_rescale_compile.py."""
from __future__ import annotations

import math

import pytest

from instruments.harness import attention_reference, rel_error
from kernels import cuda

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

ATTN_TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2}
LSE_TOL = 2e-3
# (B, H, S): one block, partial blocks, S a multiple of 128 but not of 176, of 176, a tail
SHAPES = ((1, 1, 1), (1, 2, 77), (2, 3, 300), (1, 2, 1024), (1, 1, 1056), (2, 2, 1029),
          (1, 1, 2048))


TILES = [(d, bm, bn) for d in cuda.COND_RESCALE_DIMS for bm, bn in cuda.ATTENTION_TILES[d]]


def check(q, k, v, causal, scale, bm, bn, tol, lse_tol, what):
    out = torch.full_like(q, float("nan"))  # poisoned: an unwritten row fails
    o, lse = cuda.attention(q, k, v, causal=causal, scale=scale, return_lse=True, out=out,
                            tile=(bm, bn), cond_rescale=True)
    ref, ref_lse = attention_reference(q, k, v, causal, scale)
    assert not torch.isnan(o).any(), f"{what}: NaN in O"
    err = rel_error(o, ref)
    lse_err = (lse.double() - ref_lse).abs().max().item()
    assert err < tol, f"{what}: rel err {err:.2e}"
    assert lse_err < lse_tol, f"{what}: LSE err {lse_err:.2e}"
    return o


def growing_max(B, H, S, d, bn, growth, dtype, gen):
    """q, k, v whose scores rise by `growth` (base 2) per block of bn keys, plus noise: column 0
    of every q row is 4, column 0 of key n is proportional to n (scale 1/sqrt(d))."""
    q, k, v = (0.3 * torch.randn(B, H, S, d, device="cuda", generator=gen) for _ in range(3))
    per_key = growth / bn / math.log2(math.e) / (4 / math.sqrt(d))  # natural-log units per key
    q[..., 0] = 4.0
    k[..., 0] = per_key * torch.arange(S, device="cuda", dtype=torch.float32)
    return q.to(dtype), k.to(dtype), v.to(dtype)


@pytest.mark.parametrize("d,bm,bn", TILES, ids=[f"d{d}-{bm}x{bn}" for d, bm, bn in TILES])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_random_inputs_match_float64(dtype, causal, d, bm, bn):
    gen = torch.Generator(device="cuda").manual_seed(23 + bn + causal)
    for B, H, S in SHAPES:
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        check(q, k, v, causal, 1 / math.sqrt(d), bm, bn, ATTN_TOL[dtype], LSE_TOL,
              f"d {d} {bm}x{bn} {(B, H, S)} causal={causal} {dtype}")


@pytest.mark.parametrize("d,bm,bn", TILES, ids=[f"d{d}-{bm}x{bn}" for d, bm, bn in TILES])
@pytest.mark.parametrize("growth", [3.0, 12.0], ids=["lag", "every-block"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_growing_row_max(dtype, growth, d, bm, bn):
    """The row max rises block after block: by 3 (base 2) the stale max is kept for two blocks
    (P up to 2^6 against it) and reset on the third; by 12 every block moves it past the
    threshold and every warp rescales. Both against float64, and against the plain build (the
    same attention, to rounding)."""
    gen = torch.Generator(device="cuda").manual_seed(int(growth) + bn)
    for causal in (False, True):
        for B, H, S in ((1, 2, 1029), (2, 1, 2048)):
            q, k, v = growing_max(B, H, S, d, bn, growth, dtype, gen)
            what = f"growth {growth} d {d} {bm}x{bn} {(B, H, S)} causal={causal} {dtype}"
            o = check(q, k, v, causal, 1 / math.sqrt(d), bm, bn, ATTN_TOL[dtype], LSE_TOL, what)
            plain = cuda.attention(q, k, v, causal=causal, tile=(bm, bn))
            assert rel_error(o, plain.double()) < ATTN_TOL[dtype], what


@pytest.mark.parametrize("d,bm,bn", TILES, ids=[f"d{d}-{bm}x{bn}" for d, bm, bn in TILES])
def test_large_scores_and_repeatable(d, bm, bn):
    """Magnitude-10 inputs with scale 0.05 (scores in the thousands, the running max jumps by far
    more than 2^8 between blocks): no NaN, still right; the same inputs twice, the same bits."""
    gen = torch.Generator(device="cuda").manual_seed(5 + bn)
    q, k, v = (10 * torch.randn(1, 2, 333, d, device="cuda", dtype=torch.float16, generator=gen)
               for _ in range(3))
    for causal in (False, True):
        check(q, k, v, causal, 0.05, bm, bn, ATTN_TOL[torch.float16], 5e-2,  # |LSE| ~ 1e3
              f"magnitude 10, d {d} {bm}x{bn} causal={causal}")
    q, k, v = (torch.randn(2, 4, 3000, d, device="cuda", dtype=torch.bfloat16, generator=gen)
               for _ in range(3))
    for causal in (False, True):
        a = cuda.attention(q, k, v, causal=causal, tile=(bm, bn), cond_rescale=True)
        b = cuda.attention(q, k, v, causal=causal, tile=(bm, bn), cond_rescale=True)
        assert torch.equal(a, b), (d, bm, bn, causal)
