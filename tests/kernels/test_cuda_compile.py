"""CPU-only checks of the CUDA C++ twins (kernels/cuda): each .cu compiles for sm_90a with nvcc
(the dev extras' wheel), ptxas keeps every feature (no spills, setmaxnreg honoured, wgmma not
serialized), and every kernel instance's SASS has the Hopper instructions its design needs, so
a twin cannot silently lose one. Also the Python entry points' input errors, on CPU tensors."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from kernels import cuda
from kernels.cuda import compile as cc

# SASS of every kernel instance must hold these (what each is, in the PTX it came from):
#   HGMMA       wgmma.mma_async            UTMALDG   cp.async.bulk.tensor (global -> shared)
#   UTMASTG     the TMA store of the tile  SYNCS     mbarrier init / arrive / try_wait (+ expect_tx)
#   USETMAXREG  setmaxnreg.inc / .dec      WARPGROUP wgmma.fence / commit / wait
#   (the GEMMs' epilogue stages with STS; the `stsm` ablation with stmatrix, STSM)
COMMON = ("HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "USETMAXREG", "WARPGROUP")
TURNS = ("BAR.SYNC", "BAR.ARV")  # the pingpong turns: bar.sync / bar.arrive on named barriers
# kernel name -> (instances: fp16/bf16 x ring depths [x causal], SASS it must hold, wgmma N)
# (attention: fp16/bf16 x full/causal x the tiles of cuda.ATTENTION_TILES, and again with
# cond_rescale at cuda.COND_RESCALE_DIMS and persistent at cuda.PERSISTENT_TILES, which takes no
# turns (PLAIN_ONLY); its wgmma Ns are the instance's BN (Q K^T) and d (P V): None here, read
# from the mangled name)
# ws: fp16/bf16 x (s2, s3, the stsm and lockstep ablations of s3; l2_128 runs s3's code)
EXPECT = {
    "gemm_ws.cu": {"gemm_ws_kernel": (8, COMMON, 256)},
    "gemm_ws_pingpong.cu": {"gemm_ws_pingpong_kernel": (4, COMMON + TURNS, 128)},
    # + the exp2 of the softmax
    "attention_fa3.cu": {"attention_fa3_kernel": (
        4 * sum(len(t) * (1 + (d in cuda.COND_RESCALE_DIMS))
                for d, t in cuda.ATTENTION_TILES.items())
        + 4 * sum(len(t) for t in cuda.PERSISTENT_TILES.values()),
        COMMON + TURNS + ("MUFU.EX2",), None)},
}
PLAIN_ONLY = TURNS  # what the persistent attention instances lack (no turns)


def persistent(mangled: str, source: str) -> bool:
    return source == "attention_fa3.cu" and cc.fa3_instance(mangled)["persistent"]


def kind(mangled: str, source: str) -> str:
    """The kernel a mangled instance name belongs to (longest name first: ws_pingpong ⊃ ws)."""
    for name in sorted(EXPECT[source], key=len, reverse=True):
        if f"{len(name)}{name}" in mangled:
            return name
    raise AssertionError(f"unexpected kernel {mangled} in {source}")


@pytest.fixture(scope="session")
def built():
    """{source: (cubin, ptxas report)}, both compiled at once (about 2 s each, cached)."""
    nvcc = cc.find_nvcc()
    assert nvcc is not None, ("no nvcc: `pip install -e .[dev]` brings the nvidia-cuda-nvcc wheel "
                              "(pyproject.toml, extra `cuda`)")
    with ThreadPoolExecutor(len(cuda.SOURCES)) as pool:
        results = pool.map(lambda s: cc.compile_cubin(s, nvcc), cuda.SOURCES)
        return dict(zip(cuda.SOURCES, results))


@pytest.mark.parametrize("source", cuda.SOURCES)
def test_sass_has_the_hopper_pieces(built, source):
    cubin, _ = built[source]
    funcs = cc.sass_by_function(cubin)
    seen = {}
    for mangled, sass in funcs.items():
        name = kind(mangled, source)
        seen[name] = seen.get(name, 0) + 1
        _, ops, n = EXPECT[source][name]
        if persistent(mangled, source):
            ops = tuple(op for op in ops if op not in PLAIN_ONLY)
        missing = [op for op in ops if op not in sass]
        assert not missing, f"{source} {name}: SASS lacks {missing}"
        # the wgmma shape the design needs (m64n256 for ws, m64n128 for pingpong; attention:
        # m64nBN for the scores, m64nD for P V)
        if n is None:
            inst = cc.fa3_instance(mangled)
            ns = {inst["block_n"], inst["d"]}
            assert set(map(int, re.findall(r"HGMMA\.64x(\d+)x16\.F32", sass))) == ns, mangled
        else:
            assert re.search(rf"HGMMA\.64x{n}x16\.F32", sass), f"{mangled}: no HGMMA.64x{n}x16"
        # the producer gives registers back, the consumers take them
        assert "USETMAXREG.DEALLOC" in sass, f"{mangled}: no setmaxnreg.dec (producer)"
        assert "USETMAXREG.TRY_ALLOC" in sass, f"{mangled}: no setmaxnreg.inc (consumers)"
        assert "LDL" not in sass and "STL" not in sass, f"{mangled}: local memory (spills)"
    assert seen == {k: v[0] for k, v in EXPECT[source].items()}, seen


def test_fa3_softmax_runs_under_its_own_pv(built):
    """As the Gluon fa3 (tests/kernels/test_attention_compile.py): in every instance's SASS the
    softmax's exps (BN / 2 + 2 a thread: 66 at BN 128) lie between the wait for the scores and
    the wait for P_{j-1}·V_{j-1} (schedule_fence in ptx/schedule.cuh keeps ptxas from hoisting
    the second above them)."""
    cubin, _ = built["attention_fa3.cu"]
    for mangled, sass in cc.sass_by_function(cubin).items():
        bn = cc.fa3_instance(mangled)["block_n"]
        assert cc.softmax_under_pv(sass) == [bn // 2 + 2], mangled


def ws_ablation(mangled: str) -> int:
    """gemm_ws_kernel<BF16, STAGES, ABLATION>: the last template argument (0 none, 1 stsm,
    2 lockstep; kernels.cuda.GEMM_ABLATIONS)."""
    return int(re.search(r"gemm_ws_kernelILb[01]ELi\d+ELi(\d+)EE", mangled).group(1))


@pytest.mark.parametrize("source", ["gemm_ws.cu", "gemm_ws_pingpong.cu"])
def test_gemm_epilogue_staging(built, source):
    """The GEMMs stage the tile with 64 STS a thread (the version results/h200-cuda.json
    measures), and no STSM -- except the `stsm` ablation: 16 stmatrix.x4 for the 64 x 256
    accumulator, and no STS. The `lockstep` ablation syncs both consumers (256 threads) in
    its k-loop; the default ws instances have no 256-thread barrier at all."""
    cubin, _ = built[source]
    for mangled, sass in cc.sass_by_function(cubin).items():
        stsm = len(re.findall(r"\bSTSM\.16\.M88\.4\b", sass))
        sts = len(re.findall(r"\bSTS\b", sass))
        ws = kind(mangled, source) == "gemm_ws_kernel"
        abl = ws_ablation(mangled) if ws else 0
        if abl == cuda.GEMM_ABLATIONS["stsm"]:
            assert (stsm, sts) == (16, 0), f"{mangled}: {stsm} STSM, {sts} STS"
        else:
            assert (stsm, sts) == (0, 64), f"{mangled}: {stsm} STSM, {sts} STS"
        if ws:
            both = re.search(r"BAR\.SYNC\S*\s+\w+,\s*0x100\b", sass)
            assert bool(both) == (abl == cuda.GEMM_ABLATIONS["lockstep"]), mangled


def test_headers_list_every_header():
    """kernels.cuda.HEADERS keys the cubin cache (compile.py): a header missing from it would
    let a stale cubin pass these tests."""
    on_disk = {p.relative_to(cuda.HERE).as_posix()
               for ext in ("*.cuh", "*.h") for p in cuda.HERE.rglob(ext)
               if "build" not in p.relative_to(cuda.HERE).parts}
    assert on_disk == set(cuda.HEADERS)


@pytest.mark.parametrize("source", cuda.SOURCES)
def test_ptxas_keeps_every_feature(built, source):
    """No spills; no C7508 (setmaxnreg ignored) or C7510 (wgmma serialized) warnings."""
    _, report = built[source]
    assert "warning" not in report.lower(), report
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert spills and all(s == ("0", "0") for s in spills), report
    regs = [int(r) for r in re.findall(r"Used (\d+) registers", report)]
    # __launch_bounds__(384, 1): 65536 / 384 = 170 -> 168 at entry; setmaxnreg moves them later
    assert regs and all(r <= 168 for r in regs), regs


def test_pingpong_turns_use_named_barriers(built):
    """The pingpong consumers wait on their own turn (bar.sync 1 or 2 for 256 threads: both
    consumer warpgroups) and pass it with bar.arrive: both must survive in every instance."""
    for source in cuda.SOURCES:
        cubin, _ = built[source]
        for mangled, sass in cc.sass_by_function(cubin).items():
            if (TURNS[0] not in EXPECT[source][kind(mangled, source)][1]
                    or persistent(mangled, source)):
                continue
            assert re.search(r"BAR\.SYNC\S*\s+\w+,\s*0x100\b", sass), f"{mangled}: no turn wait"
            assert re.search(r"BAR\.ARV\s+\w+,\s*0x100\b", sass), f"{mangled}: no hand-over"


# ---------------------------------------------------------------- entry points (CPU tensors)
torch = pytest.importorskip("torch")


def test_gemm_errors_read_like_the_gluon_ones():
    a = torch.randn(64, 64, dtype=torch.float16)
    with pytest.raises(TypeError, match="float16 or torch.bfloat16"):
        cuda.gemm(a.float(), a.float())
    with pytest.raises(ValueError, match="inner dimensions must match"):
        cuda.gemm(a, torch.randn(32, 64, dtype=torch.float16))
    with pytest.raises(ValueError, match="multiples of 8"):
        cuda.gemm(torch.randn(60, 64, dtype=torch.float16), a)
    with pytest.raises(ValueError, match="stages must be in"):
        cuda.gemm(a, a, stages=5)
    with pytest.raises(ValueError, match="variant must be one of"):
        cuda.gemm(a, a, "pipelined")
    with pytest.raises(ValueError, match="ablation must be one of"):
        cuda.gemm(a, a, ablation="sts")
    with pytest.raises(ValueError, match="ws with 3 stages only"):
        cuda.gemm(a, a, stages=2, ablation="stsm")
    with pytest.raises(ValueError, match="CUDA device"):
        cuda.gemm(a, a)


def test_attention_errors_read_like_the_gluon_ones():
    q = torch.randn(1, 2, 64, 128, dtype=torch.float16)
    with pytest.raises(TypeError, match="same dtype"):
        cuda.attention(q, q, q.bfloat16())
    with pytest.raises(ValueError, match="same shape"):
        cuda.attention(q, q, q[:, :, :32])
    with pytest.raises(ValueError, match="head dim must be one of"):
        d96 = torch.randn(1, 2, 64, 96, dtype=torch.float16)
        cuda.attention(d96, d96, d96)
    with pytest.raises(ValueError, match="tile at head dim 128 must be"):
        cuda.attention(q, q, q, tile=(128, 80))
    with pytest.raises(TypeError, match="causal must be a bool"):
        cuda.attention(q, q, q, causal=1)
    with pytest.raises(ValueError, match="CUDA device"):
        cuda.attention(q, q, q)
