"""Launch plans on a Hopper GPU (``kernels/plans.py``; the CPU side is ``test_plans.py``): a
second ``attention`` or ``gemm`` call with the first one's key launches by its plan, on fresh
tensors, right against float64 and bit for bit what the whole way gives; a tensor the key cannot
vouch for (its start address) is refused the same way; the plan holds no memory of the first
call. Skipped without a Hopper GPU (tests/conftest.py)."""
from __future__ import annotations

import importlib
import math

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

from kernels.attention import _PLANS, attention  # noqa: E402

gemm_module = importlib.import_module("kernels.gemm")
gemm = gemm_module.gemm

# (d, S, causal, options): the default launches of the grid (persistent, pairs, d 256's pieces
# where asked) and a ragged length
LAUNCHES = [(64, 1024, True, {}), (128, 1000, False, {}), (256, 300, True, {}),
            (256, 512, False, {"tile": (128, 80)}), (128, 777, True, {"persistent": 3})]


def reference(q, k, v, causal):
    qd, kd, vd = q.double(), k.double(), v.double()
    s = (qd @ kd.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        S = q.shape[2]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1),
                          float("-inf"))
    return torch.softmax(s, dim=-1) @ vd


def inputs(D, S, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return tuple(torch.randn(2, 3, S, D, device="cuda", dtype=torch.float16, generator=gen)
                 for _ in range(3))


def rel(out, ref):
    return (torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref)).item()


@pytest.mark.parametrize("launch", LAUNCHES, ids=lambda x: "-".join(map(str, x[:3])))
def test_a_second_call_by_the_plan_is_right_and_the_same(launch):
    D, S, causal, options = launch
    _PLANS.clear()
    first = attention(*inputs(D, S, 1), causal=causal, **options)
    assert len(_PLANS.plans) == 1
    q, k, v = inputs(D, S, 2)  # fresh tensors, the same key
    again, lse = attention(q, k, v, causal=causal, return_lse=True, **options)
    assert len(_PLANS.plans) == 1
    assert rel(again, reference(q, k, v, causal)) < 4e-3
    assert lse.shape == (2, 3, S) and torch.isfinite(lse).all()
    _PLANS.clear()
    whole = attention(q, k, v, causal=causal, **options)
    assert torch.equal(again, whole)
    assert not torch.equal(first, again)


def test_a_misaligned_start_is_refused_by_the_plan():
    q, k, v = inputs(64, 256, 3)
    attention(q, k, v)
    buf = torch.empty(q.numel() + 4, device="cuda", dtype=q.dtype)
    shifted = buf[4:].view(q.shape)  # q's shape and strides, 8 bytes past an aligned start
    with pytest.raises(ValueError, match="16-byte aligned"):
        attention(shifted, k, v)
    out = torch.empty(q.numel() + 4, device="cuda", dtype=q.dtype)[4:].view(q.shape)
    attention(q, k, v, out=torch.empty_like(q))  # the key with an out
    with pytest.raises(ValueError, match="out must start at a 16-byte aligned"):
        attention(q, k, v, out=out)


def test_a_plan_holds_no_memory_of_its_first_call():
    _PLANS.clear()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    q, k, v = inputs(128, 2048, 4)
    o = attention(q, k, v)
    assert len(_PLANS.plans) == 1
    del q, k, v, o
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


@pytest.mark.parametrize("variant", ["auto", "ws_pingpong", "pipelined"])
def test_a_second_gemm_by_the_plan_is_right_and_the_same(variant):
    gen = torch.Generator(device="cuda").manual_seed(5)
    M, N, K = 1000, 520, 776
    plans = gemm_module._PLANS
    plans.clear()
    gemm(torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=gen),
         torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=gen).t(),
         variant=variant)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=gen)
    c = gemm(a, w.t(), variant=variant)
    assert len(plans.plans) == 1
    ref = a.double() @ w.double().t()
    assert rel(c, ref) < 1e-2
    plans.clear()
    assert torch.equal(c, gemm(a, w.t(), variant=variant))
    buf = torch.empty(a.numel() + 4, device="cuda", dtype=a.dtype)
    with pytest.raises(ValueError, match="a must start at a 16-byte aligned"):
        gemm(buf[4:].view(a.shape), w.t(), variant=variant)
