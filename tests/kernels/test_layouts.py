"""The layouts users hand in, checked on the CPU (``kernels/hopper.py``'s ``TMA_RULE``).

Attention reads in place every (batch, heads, seq, d) layout a TMA descriptor can address: FA3's
own (batch, seq, heads, d) handed in as its transpose, Q/K/V sliced out of a packed QKV
projection, a head dim sliced from a wider row. Contiguous tensors keep the 2-D descriptors (the
default builds, their SASS unchanged: ``sass_builds.py``); the rest go through rank-4 descriptors
whose bounds stop at each sequence's end (``kernels/attention/boxes.py``). The GEMM reads B stored
transposed (an (N, K) weight handed in as ``w.t()``) and any aligned row stride. Everything else
is refused naming the rule. No copy: every descriptor's base is the caller's memory.

Triton 3.6's interpreter cannot run these kernels (``gluon.jit`` never consults
``TRITON_INTERPRET``), so the numbers are checked on the GPU (``test_layouts_gpu.py``); here the
builds compile for sm_90a and their PTX has what their path claims."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from kernels import gemm
from kernels.attention import KERNELS, attention, check_inputs, config, host
from kernels.cuda import compile as cc
from kernels.gemm import KERNELS as GEMM_KERNELS
from kernels.gemm import common
from kernels.gemm import config as gemm_config
from kernels.hopper import TMA_RULE

B, H, S, D = 2, 3, 77, 128  # S ragged: no multiple of a tile


def t(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype)


def bshd():
    """FA3's (batch, seq, heads, d), handed in as (batch, heads, seq, d)."""
    return tuple(t(B, S, H, D).transpose(1, 2) for _ in range(3))


def packed_qkv():
    """Q, K, V sliced out of one (batch, seq, 3, heads, d) projection."""
    x = t(B, S, 3, H, D)
    return tuple(x[:, :, i].transpose(1, 2) for i in range(3))


def sliced_head_dim():
    """The middle d of a 256-wide row (offset 128 bytes: 16-byte aligned)."""
    return tuple(t(B, H, S, 256)[..., 64:64 + D] for _ in range(3))


def one_head_bshd():
    """(batch, seq, 1, d) transposed: torch calls it contiguous (a size-1 dim's stride is free)."""
    return tuple(t(B, S, 1, D).transpose(1, 2) for _ in range(3))


IN_PLACE = {"bshd": bshd, "packed_qkv": packed_qkv, "sliced_head_dim": sliced_head_dim}


@pytest.mark.parametrize("layout", list(IN_PLACE))
def test_attention_reads_the_layout_in_place(layout):
    """Accepted (on the CPU the only complaint left is the device), and each rank-4 descriptor
    is the tensor itself: its base (no copy), its shape and strides, a box of one sequence's
    rows; O (``empty_like(q)``) the same way."""
    q, k, v = IN_PLACE[layout]()
    check_inputs(q, k, v, "fa3", require_gpu=False)
    with pytest.raises(ValueError, match="CUDA device"):
        attention(q, k, v)
    o = torch.empty_like(q)
    assert host.per_head(q, k, v, o)
    cfg = config("fa3", D)
    descs = host.make_descriptors(q, k, v, o, cfg)
    for desc, x, rows in zip(descs, (q, k, v, o), (cfg.q_rows, cfg.BN, cfg.BN, cfg.q_rows)):
        assert desc.base is x and desc.base.data_ptr() == x.data_ptr()
        assert list(desc.shape) == [B, H, S, D]
        assert list(desc.strides) == list(x.stride())
        assert list(desc.block_shape) == [1, 1, rows, D]


def test_fa3_layout_keeps_o_in_it():
    """O of FA3's layout comes back in it (``empty_like`` keeps a dense tensor's strides)."""
    q, _, _ = bshd()
    o = torch.empty_like(q)
    assert o.stride() == q.stride() and o.transpose(1, 2).is_contiguous()


def test_contiguous_keeps_the_2d_descriptors():
    """Contiguous inputs (also a one-head FA3 layout, which torch calls contiguous) take the
    default build: 2-D descriptors over the (batch·heads·seq, d) view of the same memory, O's
    pointer."""
    for q, k, v in ((t(B, H, S, D), t(B, H, S, D), t(B, H, S, D)), one_head_bshd()):
        o = torch.empty_like(q)
        assert not host.per_head(q, k, v, o)
        descs = host.make_descriptors(q, k, v, o, config("fa3", D))
        for desc, x in zip(descs[:3], (q, k, v)):
            assert desc.base.data_ptr() == x.data_ptr() and len(desc.block_shape) == 2
            assert list(desc.shape) == [x.numel() // D, D]
        assert descs[3] is o


@pytest.mark.parametrize("make,match", [
    (lambda: t(B, H, D, S).transpose(2, 3), "last dimension contiguous"),  # d strided
    (lambda: t(B, H, S, 68)[..., :64], "multiple of 16 bytes"),  # rows 136 bytes apart
    (lambda: t(1, 1, S, 64).expand(B, H, S, 64), "positive multiple of 16 bytes"),  # broadcast
    (lambda: t(B, H, S, 72)[..., 4:68], "16-byte aligned address"),  # starts 8 bytes in
])
def test_attention_refuses_what_tma_cannot_address(make, match):
    q = make()
    k = v = t(*q.shape)
    with pytest.raises(ValueError, match=match):
        check_inputs(q, k, v, "fa3", require_gpu=False)
    with pytest.raises(ValueError, match=match):  # k and v by the same rule
        check_inputs(k, q, v, "fa3", require_gpu=False)


def test_the_rule_is_named():
    with pytest.raises(ValueError, match=re.escape(TMA_RULE)):
        check_inputs(t(B, H, S, 68)[..., :64], *(t(B, H, S, 64),) * 2, "fa3", require_gpu=False)


def test_attention_out_by_the_same_rule(monkeypatch):
    """``out``: any addressable layout of q's shape; the rest refused before a launch."""
    monkeypatch.setattr(host, "require_hopper", lambda tensors: None)  # past the device check
    q, k, v = bshd()
    with pytest.raises(ValueError, match="out must have the last dimension contiguous"):
        attention(q, k, v, out=t(B, H, D, S).transpose(2, 3))
    with pytest.raises(ValueError, match="out must be a"):
        attention(q, k, v, out=t(B, H, S + 1, D))


# ------------------------------------------------------------------------------------ GEMM
M, N, K = 192, 256, 320


def test_gemm_reads_a_transposed_weight_in_place():
    """``w.t()`` of an (N, K) weight: accepted, its descriptor over ``w`` itself (BN x BK
    boxes), the build with ``B_TRANSPOSED``."""
    a, w = t(M, K), t(N, K)
    b = w.t()
    common.check_inputs(a, b, "ws", require_gpu=False)
    with pytest.raises(ValueError, match="CUDA device"):
        gemm(a, b)
    assert common.b_transposed(b) and not common.b_transposed(w.t().contiguous())
    cfg = gemm_config("ws")
    _, b_desc, _ = common.make_descriptors(a, b, t(M, N), cfg)
    assert b_desc.base.data_ptr() == w.data_ptr()
    assert list(b_desc.shape) == [N, K] and list(b_desc.strides) == [K, 1]
    assert list(b_desc.block_shape) == [cfg.BN, cfg.BK]


def test_gemm_takes_any_aligned_row_stride():
    """Row-major operands with a padded row (a column slice of a wider matrix): the default
    build, the row stride a runtime value of the descriptor."""
    a, b, c = t(M, K + 64)[:, :K], t(K, N + 8)[:, 8:], t(M, N + 64)[:, :N]
    common.check_inputs(a, b, "ws", require_gpu=False)
    descs = common.make_descriptors(a, b, c, gemm_config("ws"))
    assert [list(d.strides) for d in descs] == [[K + 64, 1], [N + 8, 1], [N + 64, 1]]
    assert [d.base.data_ptr() for d in descs] == [x.data_ptr() for x in (a, b, c)]


@pytest.mark.parametrize("a,b,match", [
    (t(K, M).t(), t(K, N), "no build for A stored transposed"),
    (t(M, K), t(K, N + 4)[:, :N], "b must be K x N row-major or stored transposed"),
    (t(M, K), t(N, K + 4)[:, :K].t(), r"b\.t\(\) must have .* multiple of 16 bytes"),
    (t(M, K + 4)[:, :K], t(K, N), "a must have the last dimension contiguous"),
])
def test_gemm_refuses_what_tma_cannot_address(a, b, match):
    with pytest.raises(ValueError, match=match):
        common.check_inputs(a, b, "ws", require_gpu=False)


def test_gemm_out_by_the_same_rule(monkeypatch):
    monkeypatch.setattr(common, "require_hopper", lambda tensors: None)  # past the device check
    with pytest.raises(ValueError, match="out must have"):
        gemm(t(M, K), t(K, N), out=t(M, N + 4)[:, :N])


# ---------------------------------------------------------------------------- the builds
@pytest.fixture(scope="module")
def fa3_builds():
    """fa3 d128: the default build and the one for every other layout."""
    cfg = config("fa3", 128)
    return {s: host.compile_sm90(KERNELS["fa3"], cfg, strided=s).asm for s in (False, True)}


def test_strided_build_loads_and_stores_by_rank4_tma(fa3_builds):
    """Rank-4 TMA loads of Q, K, V, and O stored by a rank-4 TMA copy (clipped at the
    sequence's end), no generic O stores; the default build the reverse."""
    ptx, base = fa3_builds[True]["ptx"], fa3_builds[False]["ptx"]
    assert re.search(r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.4d\.global\.shared::cta", ptx), "no TMA store of O"
    assert "cp.async.bulk.tensor.2d" not in ptx
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)  # O's tile read before reuse
    assert not re.search(r"st\.global\.v4", ptx), "O must not go out by generic stores"
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", base)
    assert "cp.async.bulk.tensor.4d" not in base and re.search(r"st\.global\.v4", base)


def test_strided_build_keeps_the_schedule(fa3_builds):
    """The softmax still runs under its own P·V in both consumers (as the default build)."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    exps = 64 * 128 // 128 + 2
    assert cc.softmax_under_pv(cc.sass_of_cubin(fa3_builds[True]["cubin"])) == [exps, exps]


@pytest.mark.parametrize("variant,d,persistent", [
    ("fa3", 256, True), ("fa3", 64, False), ("overlap", 128, False), ("sequential", 128, False)])
def test_strided_builds_compile(variant, d, persistent):
    """The other shapes of the path: the shared O buffer (persistent d 256), 3 consumers
    (d 64), one partition of 8 warps storing a 128-row O box (overlap, sequential)."""
    cfg = config(variant, d, persistent=persistent)
    ptx = host.compile_sm90(KERNELS[variant], cfg, strided=True).asm["ptx"]
    assert re.search(r"cp\.async\.bulk\.tensor\.4d\.global\.shared::cta", ptx)
    assert "cp.async.bulk.tensor.2d" not in ptx


@pytest.mark.parametrize("variant", ["sequential", "pipelined", "ws", "ws_pingpong"])
def test_transposed_b_is_fed_to_wgmma_k_major(variant):
    """PTX wgmma's last immediate is B's transpose bit: 1 for a row-major (K, N) B (N-major
    in shared memory), 0 for the weight's (N, K) box read through its permuted view (K-major,
    wgmma's own B layout). Every wgmma of the build says the same."""
    cfg = gemm_config(variant)
    bits = {}
    for bt in (False, True):
        ptx = common.compile_sm90(GEMM_KERNELS[variant], cfg, b_transposed=bt).asm["ptx"]
        bits[bt] = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.[^;]*, (\d);", ptx))
    assert bits == {False: {"1"}, True: {"0"}}


def test_cuda_twins_still_need_contiguous():
    """The CUDA twins share the checks but index raw pointers: a layout the Gluon kernels read
    in place is refused by them, before any build or launch."""
    from kernels import cuda

    with pytest.raises(ValueError, match="q must be contiguous .* for the CUDA twins"):
        cuda.attention(*bshd())
    w = t(N, K)
    with pytest.raises(ValueError, match="b must be contiguous .* for the CUDA twins"):
        cuda.gemm(t(M, K), w.t())
