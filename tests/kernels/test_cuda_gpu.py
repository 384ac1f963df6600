"""The CUDA C++ twins on a Hopper GPU against a float64 reference, on fresh random inputs with
poisoned outputs: the ws GEMM (ragged, non-square, more tiles than SMs, fp16/bf16, both ring
depths) and the fa3 attention (d 128, ragged S, full and causal, fp16/bf16, O and the LSE).
Skipped without a Hopper GPU (tests/conftest.py)."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

GEMM_TOL = {torch.float16: 3e-3, torch.bfloat16: 1.5e-2}
ATTN_TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2}
LSE_TOL = 2e-3
GEMM_SHAPES = [(8, 8, 8), (64, 64, 64), (128, 256, 64), (200, 136, 72), (1000, 520, 264),
               (136, 1032, 1000), (1024, 1024, 1024), (2056, 3000, 520), (4096, 4096, 512)]


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("variant,stages,ablation", [
    ("ws", 2, None), ("ws", 3, None), ("ws", 3, "stsm"), ("ws", 3, "lockstep"), ("ws", 3, "l2_128"),
    ("ws_pingpong", 4, None), ("ws_pingpong", 5, None)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_gemm_matches_float64(dtype, variant, stages, ablation):
    from kernels import cuda

    gen = torch.Generator(device="cuda").manual_seed(1000 + stages)
    for M, N, K in GEMM_SHAPES:
        a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
        b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)  # poisoned
        cuda.gemm(a, b, variant, stages=stages, out=out, ablation=ablation)
        err = rel_err(out, a.double() @ b.double())
        assert err < GEMM_TOL[dtype], (f"cuda {variant} s{stages} {ablation} {M}x{N}x{K}: "
                                       f"rel err {err:.2e}")


def test_pingpong_odd_tile_counts():
    """Tiles per CTA odd and even (consumer 0 gets one more): the turn counts must balance."""
    from kernels import cuda

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for tiles in (1, 2, 3, sms + 1, 2 * sms + 1):
        a = torch.randn(128 * tiles, 256, device="cuda", dtype=torch.float16)
        b = torch.randn(256, 128, device="cuda", dtype=torch.float16)
        out = cuda.gemm(a, b, "ws_pingpong")
        assert rel_err(out, a.double() @ b.double()) < GEMM_TOL[torch.float16], tiles


def test_gemm_repeatable():
    """The same inputs twice give the same bits (a race would move them)."""
    from kernels import cuda

    a = torch.randn(3000, 1336, device="cuda", dtype=torch.float16)
    b = torch.randn(1336, 5000, device="cuda", dtype=torch.float16)
    for variant in ("ws", "ws_pingpong"):
        assert torch.equal(cuda.gemm(a, b, variant), cuda.gemm(a, b, variant))
    for ablation in ("stsm", "lockstep"):
        assert torch.equal(cuda.gemm(a, b, ablation=ablation), cuda.gemm(a, b, ablation=ablation))


def reference(q, k, v, causal, scale):
    qd, kd, vd = q.double(), k.double(), v.double()
    s = (qd @ kd.transpose(-1, -2)) * scale
    if causal:
        S = q.shape[2]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vd, torch.logsumexp(s, dim=-1)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_attention_matches_float64(dtype, causal):
    from kernels import cuda

    gen = torch.Generator(device="cuda").manual_seed(7 + causal)
    # ragged lengths: one block, a partial tile, tiles + a tail, many blocks; S = 1 too
    for B, H, S in ((1, 1, 1), (1, 2, 77), (2, 3, 300), (1, 2, 1000), (1, 1, 2048), (2, 2, 1029)):
        q, k, v = (torch.randn(B, H, S, 128, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        out = torch.full_like(q, float("nan"))
        o, lse = cuda.attention(q, k, v, causal=causal, return_lse=True, out=out)
        ref, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(128))
        assert not torch.isnan(o).any(), f"{(B, H, S)} causal={causal}: NaN in O"
        err = rel_err(o, ref)
        lse_err = (lse.double() - ref_lse).abs().max().item()
        assert err < ATTN_TOL[dtype], f"{(B, H, S)} causal={causal} {dtype}: rel err {err:.2e}"
        assert lse_err < LSE_TOL, f"{(B, H, S)} causal={causal}: LSE err {lse_err:.2e}"


def test_attention_scale_and_large_inputs():
    """Another scale, and inputs of magnitude 10 (scores in the thousands): no NaN, still right."""
    from kernels import cuda

    q, k, v = (10 * torch.randn(1, 2, 333, 128, device="cuda", dtype=torch.float16)
               for _ in range(3))
    for causal in (False, True):
        o, lse = cuda.attention(q, k, v, causal=causal, scale=0.05, return_lse=True)
        ref, ref_lse = reference(q, k, v, causal, 0.05)
        assert not torch.isnan(o).any()
        assert rel_err(o, ref) < ATTN_TOL[torch.float16]
        assert (lse.double() - ref_lse).abs().max().item() < 5e-2  # |LSE| ~ 1e3 here


def test_wrong_device_raises():
    from kernels import cuda

    with pytest.raises(ValueError, match="CUDA device"):
        cuda.gemm(torch.randn(64, 64).half(), torch.randn(64, 64, device="cuda").half())
