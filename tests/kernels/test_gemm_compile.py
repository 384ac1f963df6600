"""CPU-only checks of the Gluon GEMMs: each variant compiles for sm_90a without a GPU, and its
PTX has what its name claims. A variant that silently loses its feature fails here."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from kernels.gemm import KERNELS, VARIANTS, check_inputs, common, config

# (variant, stages) pairs compiled once per session; each compile takes about a second.
CASES = [("sequential", 1), ("pipelined", 2), ("pipelined", 4), ("ws", 2), ("ws", 3),
         ("ws_pingpong", 2), ("ws_pingpong", 4)]


@pytest.fixture(scope="session")
def compiled():
    cache = {}

    def get(variant, stages, dtype=torch.float16):
        key = (variant, stages, dtype)
        if key not in cache:
            cache[key] = common.compile_sm90(KERNELS[variant], config(variant, stages), dtype)
        return cache[key]

    return get


def count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


@pytest.mark.parametrize("variant,stages", CASES)
def test_ptx_has_the_hopper_pieces(compiled, variant, stages):
    k = compiled(variant, stages)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") >= 1, "no TMA load"
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta") >= 1, "no TMA store"
    assert count(ptx, r"mbarrier\.try_wait\.parity") >= 1, "no mbarrier wait"
    assert count(ptx, r"mbarrier\.arrive\.expect_tx") >= 1, "TMA not tracked by expect-tx bytes"
    assert count(ptx, r"wgmma\.mma_async") >= 1, "no wgmma"
    if variant in ("ws", "ws_pingpong"):
        assert count(ptx, r"setmaxnreg\.inc") >= 1 and count(ptx, r"setmaxnreg\.dec") >= 1
        assert re.search(r"\.maxnreg\s+\d+", ptx), "setmaxnreg needs a register cap at entry"
    else:
        assert "setmaxnreg" not in ptx, f"{variant} should not reallocate registers"


@pytest.mark.parametrize("variant,stages", CASES)
def test_ring_depth(compiled, variant, stages):
    """The number of mbarriers initialised and the shared memory follow the ring depth."""
    k = compiled(variant, stages)
    inits = count(k.asm["ptx"], r"mbarrier\.init\.shared")
    expected = {"sequential": 1, "pipelined": stages, "ws": 2 * stages, "ws_pingpong": 2 * stages + 2}
    assert inits == expected[variant], f"{inits} mbarrier inits, expected {expected[variant]}"
    cfg = config(variant, stages)
    ring = stages * (cfg.BM * cfg.BK + cfg.BK * cfg.BN) * 2
    assert ring <= k.metadata.shared <= common.SMEM_PER_BLOCK
    assert k.metadata.shared >= cfg.smem_bytes() - 1024


def test_more_stages_more_smem(compiled):
    assert compiled("pipelined", 4).metadata.shared > compiled("pipelined", 2).metadata.shared
    assert compiled("ws_pingpong", 4).metadata.shared > compiled("ws_pingpong", 2).metadata.shared


def test_ws_variants_have_roles(compiled):
    """ws: 8 consumer warps + 1 producer warp -> 3 warpgroups; pingpong: 4 + 4 + 1."""
    for variant in ("ws", "ws_pingpong"):
        k = compiled(variant, config(variant).stages)
        assert k.metadata.num_warps == 12  # rounded up to whole warpgroups
    pp = compiled("ws_pingpong", 4).asm["ptx"]
    # the turn barriers: each consumer hands the tensor cores over (a plain arrive, no tx)
    assert count(pp, r"mbarrier\.arrive\.shared::cta\.b64") >= 2


@pytest.mark.parametrize("tile", [None, (128, 128, 64), (64, 256, 64)])
def test_pingpong_row_blocks(tile):
    """The pingpong tile is row blocks of 64 (192 x 128 = 3, since Gluon tensors are powers of
    two): the producer loads one A box per block, each block is its own m64n128 wgmma group, and
    the consumer waits until only this k-step's groups are in flight. The accumulators must fit
    the consumers' registers without spilling."""
    cfg = config("ws_pingpong", 4, tile=tile)
    k = common.compile_sm90(KERNELS["ws_pingpong"], cfg, torch.float16)
    ptx = k.asm["ptx"]
    assert cfg.row_blocks == {None: 3, (128, 128, 64): 2, (64, 256, 64): 1}[tile]
    assert re.search(rf"wgmma\.wait_group\.sync\.aligned {cfg.row_blocks}\b", ptx), \
        "the k-step wait must leave exactly this k-step's row-block groups in flight"
    shapes = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", ptx))
    assert shapes == {f"m64n{cfg.BN}k16"}
    assert count(ptx, r"setmaxnreg\.inc\.sync\.aligned\.u32\s+240;") >= 1, \
        "consumer at 240 registers"
    # A boxes of 64 rows: the ring's A part is STAGES x row_blocks boxes of 64 x 64
    assert k.metadata.shared >= cfg.stages * (cfg.BM * cfg.BK + cfg.BK * cfg.BN) * 2
    assert ptxas_spills(ptx) == 0


def ptxas_spills(ptx: str) -> int:
    """Spill bytes ptxas reports for the sm_90a PTX (stores + loads)."""
    import os
    import subprocess
    import tempfile

    import triton

    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", src, "-o", os.devnull],
                           capture_output=True, text=True, check=True)
    return sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", r.stderr))


def test_pingpong_tile_limits():
    with pytest.raises(ValueError, match="256 accumulator registers a thread > 192"):
        config("ws_pingpong", 4, tile=(256, 128, 64))
    with pytest.raises(ValueError, match="multiple of 64"):
        config("ws_pingpong", 4, tile=(96, 128, 64))
    with pytest.raises(ValueError, match="stages must be in 2..4"):
        config("ws_pingpong", 5)


def test_bf16_compiles(compiled):
    ptx = compiled("ws_pingpong", 4, torch.bfloat16).asm["ptx"]
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.bf16\.bf16", ptx)
    ptx16 = compiled("ws_pingpong", 4).asm["ptx"]
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", ptx16)


# ------------------------------------------------------------------------------- bad inputs
def t(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype)


@pytest.mark.parametrize("a,b,exc,match", [
    (t(64, 64, dtype=torch.float32), t(64, 64, dtype=torch.float32), TypeError, "float16 or torch.bfloat16"),
    (t(64, 64), t(64, 64, dtype=torch.bfloat16), TypeError, "same dtype"),
    (t(64), t(64, 64), ValueError, "2-D"),
    (t(64, 32), t(64, 64), ValueError, "inner dimensions must match"),
    (t(64, 60), t(60, 64), ValueError, "multiples of 8"),
    (t(64, 64).t(), t(64, 64), ValueError, "no build for A stored transposed"),
    (t(64, 64), t(64, 64), ValueError, "CUDA device"),  # valid form, but on the CPU
])
def test_bad_inputs_raise(a, b, exc, match):
    from kernels import gemm

    with pytest.raises(exc, match=match):
        gemm(a, b)


def test_misaligned_pointer():
    base = torch.empty(64 * 64 + 4, dtype=torch.float16)
    a = base[4:].view(64, 64)  # 8 bytes past an aligned start
    with pytest.raises(ValueError, match="16-byte aligned"):
        check_inputs(a, t(64, 64), "ws", require_gpu=False)


def test_not_tensors():
    from kernels import gemm

    with pytest.raises(TypeError, match="torch.Tensor"):
        gemm([[1.0]], [[1.0]])


def test_bad_variant_and_stages():
    from kernels import gemm

    with pytest.raises(ValueError, match="variant must be one of"):
        gemm(t(64, 64), t(64, 64), variant="fast")
    with pytest.raises(ValueError, match="stages must be in 2..4"):
        config("pipelined", 7)
    with pytest.raises(ValueError, match="227 KiB shared memory per block"):
        config("ws", 4)  # 4 x 48 KiB + a 64 KiB epilogue tile does not fit
    assert set(VARIANTS) == set(KERNELS)


def test_auto_rule():
    """variant="auto": a rule over the shape (auto.py), every pick a configuration that builds,
    the L2 group 8 (or fewer row blocks there are) or, for ws over many tiles, 16."""
    from kernels.gemm import auto

    shapes = [(8192, 8192, 8192), (6144, 6144, 6144), (4096, 4096, 4096), (8192, 8192, 2048),
              (16384, 4096, 4096), (1024, 1024, 1024), (8000, 8008, 4104), (256, 8192, 512)]
    for M, N, K in shapes:
        pick = auto.choose(M, N, K, sms=132)
        cfg = config(pick.variant, pick.stages, None, pick.tile, pick.group_m)
        assert pick.variant in ("ws", "ws_pingpong")
        assert cfg.group_m == min(8, -(-M // cfg.BM)) or (pick.variant, cfg.group_m) == ("ws", 16)
    assert auto.choose(8192, 8192, 8192, sms=132).group_m == 16  # 15.5 tiles a CTA
    assert auto.choose(4096, 4096, 4096, sms=132).group_m == 8  # 3.9
    # the rule's two forces: a long K favours ws's faster k-step, a short one pingpong's hidden
    # epilogue
    assert auto.choose(2048, 2048, 16384, sms=132).variant == "ws"
    assert auto.choose(8192, 8192, 512, sms=132).variant == "ws_pingpong"


def test_group_m_is_a_constexpr(compiled):
    """A wider L2 group is the GROUP_M constexpr: the same kernel, another tile order."""
    base = compiled("ws", 3).asm["ptx"]
    wide = common.compile_sm90(KERNELS["ws"], config("ws", 3, group_m=16)).asm["ptx"]
    assert wide != base and count(wide, r"wgmma\.mma_async") == count(base, r"wgmma\.mma_async")
    with pytest.raises(ValueError, match="group_m"):
        config("ws", 3, group_m=0)


def test_auto_takes_no_overrides():
    from kernels.gemm import gemm

    a = torch.empty(64, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="auto"):
        gemm(a, a, variant="auto", stages=3)
