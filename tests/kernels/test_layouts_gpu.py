"""The layouts users hand in, on a Hopper GPU (``test_layouts.py`` checks on the CPU which are
read in place): attention on FA3's (batch, seq, heads, d), on Q/K/V sliced out of a packed QKV
projection and on a sliced head dim, every variant x head dim x causal, persistent fa3 too,
against a float64 reference (O and the LSE) on ragged lengths with several batches and heads;
O written only inside its own view (the rank-4 descriptor's bounds stop at each sequence's end);
the inputs untouched; a ConSan run of the rank-4 path. The GEMM on an (N, K) weight handed in as
``w.t()`` and on padded rows, every variant. Skipped without a Hopper GPU (tests/conftest.py)."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3")
TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2}  # ||O - ref|| / ||ref||, as the ladder's
LSE_TOL = 2e-3
POISON = 1234.5  # what the memory around a view holds: a stray write changes it
# ragged lengths (no multiple of a tile or of 16), several batches and heads
SHAPES = ((1, 2, 77), (2, 3, 300), (3, 2, 1000))


def reference(q, k, v, causal):
    """float64 O and natural-log LSE of (batch, heads, seq, d) inputs."""
    qd, kd, vd = q.double(), k.double(), v.double()
    s = (qd @ kd.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        S = q.shape[2]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vd, torch.logsumexp(s, dim=-1)


def bshd(B, H, S, D, dtype, gen):
    """FA3's (batch, seq, heads, d) and an O of the same layout in a poisoned buffer."""
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
               for _ in range(3))
    buf = torch.full((B, S, H, D), POISON, device="cuda", dtype=dtype)
    return q, k, v, buf, buf.transpose(1, 2)


def packed_qkv(B, H, S, D, dtype, gen):
    """Q, K, V sliced out of one (batch, seq, 3, heads, d) projection; O into the middle third of
    another such buffer, the rest of which must stay as it was."""
    x = torch.randn(B, S, 3, H, D, device="cuda", dtype=dtype, generator=gen)
    buf = torch.full((B, S, 3, H, D), POISON, device="cuda", dtype=dtype)
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))
    return q, k, v, buf, buf[:, :, 1].transpose(1, 2)


def sliced_head_dim(B, H, S, D, dtype, gen):
    """The middle d of rows 2d + 16 wide (offset 8 elements: 16 bytes); O the same way."""
    W = 2 * D + 16
    q, k, v = (torch.randn(B, H, S, W, device="cuda", dtype=dtype, generator=gen)[..., 8:8 + D]
               for _ in range(3))
    buf = torch.full((B, H, S, W), POISON, device="cuda", dtype=dtype)
    return q, k, v, buf, buf[..., 8:8 + D]


LAYOUTS = {"bshd": bshd, "packed_qkv": packed_qkv, "sliced_head_dim": sliced_head_dim}


def check_layout(layout, variant, B, H, S, D, dtype, causal, gen, **kw):
    """O and the LSE against float64; O's buffer written exactly inside O's view (the rest
    still POISON), every element of the view written (it started as POISON, which the check
    against the reference would catch); the inputs as they were."""
    from kernels.attention import attention

    q, k, v, buf, out = LAYOUTS[layout](B, H, S, D, dtype, gen)
    before = [x.clone() for x in (q, k, v)]
    o, lse = attention(q, k, v, causal=causal, variant=variant, return_lse=True, out=out, **kw)
    torch.cuda.synchronize()
    assert o.data_ptr() == out.data_ptr() and o.stride() == out.stride()
    ref, ref_lse = reference(q, k, v, causal)
    err = ((o.double() - ref).norm() / ref.norm()).item()
    lse_err = (lse.double() - ref_lse).abs().max().item()
    name = f"{variant} {layout} {(B, H, S, D)} {dtype} causal={causal} {kw}"
    assert err < TOL[dtype], f"{name}: rel err {err:.2e}"
    assert lse_err < LSE_TOL, f"{name}: LSE err {lse_err:.2e}"
    outside = torch.ones_like(buf, dtype=torch.bool)
    outside_view = outside[..., 8:8 + D] if layout == "sliced_head_dim" else (
        outside[:, :, 1] if layout == "packed_qkv" else outside)
    outside_view.fill_(False)
    assert (buf[outside] == POISON).all(), f"{name}: wrote outside O's view"
    for x, x0 in zip((q, k, v), before):
        assert torch.equal(x, x0), f"{name}: an input changed"


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_layouts_match_float64(variant, layout, d, causal):
    gen = torch.Generator(device="cuda").manual_seed(hash((variant, layout, d, causal)) % 2**31)
    dtypes = (torch.float16, torch.bfloat16) if variant == "fa3" else (torch.float16,)
    for dtype in dtypes:
        for B, H, S in SHAPES:
            check_layout(layout, variant, B, H, S, d, dtype, causal, gen)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("ctas", [True, 3], ids=["one_per_sm", "3_ctas"])
def test_persistent_layouts_match_float64(ctas, d, causal):
    """Persistent fa3 on FA3's layout: one CTA per SM, and 3 CTAs walking many tiles each (the
    O buffer reused tile after tile behind its TMA store)."""
    gen = torch.Generator(device="cuda").manual_seed(hash((ctas, d, causal)) % 2**31)
    for layout in ("bshd", "packed_qkv"):
        for B, H, S in SHAPES:
            check_layout(layout, "fa3", B, H, S, d, torch.float16, causal, gen, persistent=ctas)


@pytest.mark.parametrize("variant", VARIANTS)
def test_layout_lengths_on_tile_edges(variant):
    """One row, exact multiples of the tiles, one past them."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    for S in (1, 128, 384, 385):
        for causal in (False, True):
            check_layout("bshd", variant, 2, 3, S, 128, torch.float16, causal, gen)


def test_layout_matches_contiguous():
    """The rank-4 path computes what the 2-D one does: the same inputs in FA3's layout and
    contiguous give the same O and LSE to the bit (same tiles, same products, same order)."""
    from kernels.attention import attention

    gen = torch.Generator(device="cuda").manual_seed(11)
    for d in (64, 128, 256):
        for causal in (False, True):
            q, k, v = (torch.randn(2, 3, 1000, d, device="cuda", dtype=torch.float16,
                                   generator=gen) for _ in range(3))
            o0, l0 = attention(q, k, v, causal=causal, return_lse=True)
            qs, ks, vs = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
            o1, l1 = attention(qs, ks, vs, causal=causal, return_lse=True)
            assert o1.stride() == qs.stride()
            assert torch.equal(o0, o1) and torch.equal(l0, l1), (d, causal)


def test_contiguous_inputs_into_a_strided_out():
    """Contiguous Q, K, V with O into FA3's layout (any one tensor off the 2-D form sends all
    four through rank-4 descriptors): the same O as the default build, only O's view written."""
    from kernels.attention import attention

    gen = torch.Generator(device="cuda").manual_seed(13)
    for causal in (False, True):
        q, k, v = (torch.randn(3, 2, 300, 128, device="cuda", dtype=torch.float16, generator=gen)
                   for _ in range(3))
        buf = torch.full((3, 300, 2, 256), POISON, device="cuda", dtype=torch.float16)
        out = buf[..., 64:192].transpose(1, 2)
        attention(q, k, v, causal=causal, out=out)
        assert torch.equal(out, attention(q, k, v, causal=causal))
        assert (buf[..., :64] == POISON).all() and (buf[..., 192:] == POISON).all()


CONSAN_SCRIPT = textwrap.dedent("""
    import torch, triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    from kernels.attention import attention
    for variant, persistent in (("ws", False), ("fa3", False), ("fa3", 2), ("overlap", False)):
        for causal in (False, True):
            x = torch.randn(2, 300, 3, 2, 128, device="cuda", dtype=torch.float16)
            q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))
            o = attention(q, k, v, causal=causal, variant=variant, persistent=persistent)
            torch.cuda.synchronize()
            ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                   is_causal=causal)
            err = ((o.double() - ref).norm() / ref.norm()).item()
            assert err < 4e-3, (variant, persistent, causal, err)
            print(variant, persistent, causal, "ok", err, flush=True)
""")


def test_consan_rank4_path(tmp_path):
    """ConSan (``test_attention_gpu.py``'s) on the rank-4 path: the TMA loads as before, and
    O's TMA store from the tile the warps wrote (proxy fence, the copy's read awaited before
    the persistent kernel's next tile writes the buffer)."""
    env = dict(os.environ, TRITON_INSTRUMENTATION_MODE="consan",
               TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CONSAN_SCRIPT], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" ok ") == 8


# ------------------------------------------------------------------------------------ GEMM
GEMM_TOL = {torch.float16: 3e-3, torch.bfloat16: 1.5e-2}
GEMM_SHAPES = [(8, 8, 8), (200, 136, 72), (1000, 520, 264), (136, 1032, 1000), (2056, 3000, 520)]


def gemm_err(out, a, b):
    ref = a.double() @ b.double()
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("variant", ["sequential", "pipelined", "ws", "ws_pingpong", "auto"])
def test_transposed_weight_matches_float64(variant, dtype):
    """C = A·Wᵀ with W an (N, K) weight handed in as ``w.t()``: read as it lies, never copied
    (the weight unchanged); bit-identical to the same product with a row-major copy of Wᵀ (the
    same wgmmas on the same values, only B's shared-memory order differs)."""
    from kernels import gemm

    gen = torch.Generator(device="cuda").manual_seed(hash((variant, "bt")) % 2**31)
    for M, N, K in GEMM_SHAPES:
        a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
        w = torch.randn(N, K, device="cuda", dtype=dtype, generator=gen)
        w0 = w.clone()
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
        gemm(a, w.t(), variant=variant, out=out)
        err = gemm_err(out, a, w.t())
        assert err < GEMM_TOL[dtype], f"{variant} {M}x{N}x{K} {dtype}: rel err {err:.2e}"
        assert torch.equal(w, w0)
        assert torch.equal(out, gemm(a, w.t().contiguous(), variant=variant))


@pytest.mark.parametrize("variant", ["sequential", "pipelined", "ws", "ws_pingpong"])
def test_padded_rows_match_float64(variant):
    """A, B and C as column slices of wider matrices: only C's own columns written."""
    from kernels import gemm

    gen = torch.Generator(device="cuda").manual_seed(5)
    M, N, K = 1000, 520, 264
    a = torch.randn(M, K + 24, device="cuda", dtype=torch.float16, generator=gen)[:, 16:16 + K]
    b = torch.randn(K, N + 8, device="cuda", dtype=torch.float16, generator=gen)[:, :N]
    wide = torch.full((M, N + 40), POISON, device="cuda", dtype=torch.float16)
    gemm(a, b, variant=variant, out=wide[:, 8:8 + N])
    assert gemm_err(wide[:, 8:8 + N], a, b) < GEMM_TOL[torch.float16]
    assert (wide[:, :8] == POISON).all() and (wide[:, 8 + N:] == POISON).all()
