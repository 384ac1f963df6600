"""CPU-only checks of the CUDA fa3 twin at FA3's own tiles: the tile is a
template parameter of attention_fa3_kernel<D, BM, BN, ...> (kernels/cuda/attention.cuh), and the
instances kernels.cuda.ATTENTION_TILES lists -- FA3's 192x128 at d 64, 128x176 at d 128, 128x80
at d 256, beside 128x128 (d 128, and d 64: the Gluon fa3's persistent tile) and 128x64 (d 256) --
compile for sm_90a with what their names
claim: the score GEMM a wgmma of n = BN (HGMMA.64x176x16 at 128x176), P V one of n = d, the
consumers' register cap FA3's (240 with 2 consumer warpgroups, 160 with 3), no spills, and
shared memory within the 227 KiB a CTA may opt into; at the head dims of
kernels.cuda.COND_RESCALE_DIMS the conditional-rescaling build of every tile too (its own SASS
checks: tests/kernels/test_cuda_cond_rescale_compile.py). The instances' numerical checks are
tests/kernels/test_cuda_tiles_gpu.py (marked gpu)."""
from __future__ import annotations

import collections
import itertools
import re

import pytest

from kernels import cuda
from kernels.cuda import compile as cc

SMEM_LIMIT = 227 * 1024
STAGES = 2


def smem_bytes(d: int, bm: int, bn: int, stages: int = STAGES) -> int:
    """attention_fa3.cu's smem_bytes<T, STAGES>() (its static_assert holds it to 227 KiB too):
    1 KiB of alignment slack, Q, the K and V rings, the mbarriers."""
    return 1024 + bm * d * 2 + 2 * stages * bn * d * 2 + (1 + 4 * stages) * 8


def builds(d: int) -> tuple[bool, ...]:
    """The cond_rescale values the twin is built with at head dim d."""
    return (False, True) if d in cuda.COND_RESCALE_DIMS else (False,)


@pytest.fixture(scope="module")
def fa3():
    """{(d, bm, bn, bf16, causal, cond_rescale): (SASS, ptxas lines of that instance)}, the
    plain (not persistent) instances."""
    nvcc = cc.find_nvcc()
    assert nvcc is not None, "no nvcc: `pip install -e .[dev]` brings the nvidia-cuda-nvcc wheel"
    # (the persistent ones: tests/kernels/test_cuda_persistent_compile.py)
    return {key[:6]: built for key, built in cc.fa3_builds(nvcc).items() if not key[6]}


def test_fa3_tiles_are_instances():
    assert cuda.FA3_TILES == {64: (192, 128), 128: (128, 176), 256: (128, 80)}
    for d, tile in cuda.FA3_TILES.items():
        assert tile in cuda.ATTENTION_TILES[d]
    # the twin results/h200-cuda.json measures stays the default at d 128
    assert cuda.ATTENTION_TILES[128][0] == (128, 128)
    assert cuda.resolve_tile(128) == (128, 128) and cuda.resolve_tile(128, "fa3") == (128, 176)
    with pytest.raises(ValueError, match="tile at head dim 256"):
        cuda.resolve_tile(256, (128, 128))


def test_every_instance_is_built(fa3):
    want = {(d, bm, bn, bf16, causal, cond) for d, tiles in cuda.ATTENTION_TILES.items()
            for bm, bn in tiles for bf16 in (False, True) for causal in (False, True)
            for cond in builds(d)}
    assert set(fa3) == want


def test_attention_fa3_lists_the_same_tiles():
    """The host dispatch in attention_fa3.cu (TILE(d, bm, bn) lines) and ATTENTION_TILES agree."""
    src = (cuda.HERE / "attention_fa3.cu").read_text()
    built = {(int(d), int(bm), int(bn)) for d, bm, bn in
             re.findall(r"^\s*TILE\((\d+), (\d+), (\d+)\)\s*$", src, flags=re.MULTILINE)}
    assert built == {(d, bm, bn) for d, t in cuda.ATTENTION_TILES.items() for bm, bn in t}


@pytest.mark.parametrize("d,bm,bn", [(d, bm, bn) for d, t in cuda.ATTENTION_TILES.items()
                                     for bm, bn in t])
def test_wgmma_shapes_match_the_tile(fa3, d, bm, bn):
    """S = Q K^T: D / 16 wgmma of n = BN per block (block 0 and the loop: twice in the code);
    O += P V: BN / 16 wgmma of n = D (the loop and the last block). At 128 x 176: 16 x
    HGMMA.64x176x16 and 22 x HGMMA.64x128x16; at 128 x 80 (d 256): 32 x 64x80, 10 x 64x256."""
    for bf16, causal, cond in itertools.product((False, True), (False, True), builds(d)):
        sass, _ = fa3[(d, bm, bn, bf16, causal, cond)]
        got = collections.Counter(int(n) for n in re.findall(r"HGMMA\.64x(\d+)x16\.F32", sass))
        want = collections.Counter()
        want[bn] += 2 * (d // 16)
        want[d] += 2 * (bn // 16)
        assert got == want, (d, bm, bn, bf16, causal, dict(got))
        # the element type: ".BF16" for bf16, nothing for fp16 (SASS's default)
        assert all(x.endswith(".BF16") == bf16
                   for x in re.findall(r"HGMMA\.64x\d+x16\.F32\S*", sass)), (d, bm, bn, bf16)


@pytest.mark.parametrize("d,bm,bn", [(d, bm, bn) for d, t in cuda.ATTENTION_TILES.items()
                                     for bm, bn in t])
def test_registers_fit(fa3, d, bm, bn):
    """__launch_bounds__(THREADS, 1): 168 registers at entry with 384 threads, 128 with 512
    (3 consumers); setmaxnreg gives the producer 24 and the consumers 240 (160 with 3, FA3's
    split); every register the SASS names lies under the consumers' cap; no spills, no
    local memory."""
    consumers = bm // 64
    threads = 128 * (consumers + 1)
    cap = 240 if consumers == 2 else 160
    entry = (65536 // threads) // 8 * 8
    for bf16, causal, cond in itertools.product((False, True), (False, True), builds(d)):
        sass, ptxas = fa3[(d, bm, bn, bf16, causal, cond)]
        assert "0 bytes spill stores, 0 bytes spill loads" in ptxas, ptxas
        assert "0 bytes stack frame" in ptxas, ptxas
        used = int(re.search(r"Used (\d+) registers", ptxas).group(1))
        assert used <= entry, (used, entry)
        assert "LDL" not in sass and "STL" not in sass
        assert re.search(rf"USETMAXREG\.TRY_ALLOC\.CTAPOOL \w+, {cap:#x}\b", sass), cap
        assert re.search(r"USETMAXREG\.DEALLOC\.CTAPOOL 0x18\b", sass)
        highest = max(int(r) for r in re.findall(r"\bR(\d+)\b", sass))
        assert highest < cap, (d, bm, bn, highest, cap)
    assert 128 * 24 + 128 * consumers * cap <= 65536


@pytest.mark.parametrize("d,bm,bn", [(d, bm, bn) for d, t in cuda.ATTENTION_TILES.items()
                                     for bm, bn in t])
def test_shared_memory_fits(d, bm, bn):
    """2 stages of K and V and the Q tile within 227 KiB: 208 KiB at 128 x 176, the largest
    230,472 bytes at d 256, 128 x 80 (the kernel's static_assert says the same at compile time)."""
    assert smem_bytes(d, bm, bn) <= SMEM_LIMIT, smem_bytes(d, bm, bn)
    # K/V slots and the Q tile stay 1024-byte aligned: the 128-byte swizzle's atom
    assert (bm * d * 2) % 1024 == 0 and (bn * d * 2) % 1024 == 0


def test_fa3_tile_sizes():
    assert smem_bytes(128, 128, 176) == 1024 + 32768 + 4 * 45056 + 72
    assert smem_bytes(256, 128, 80) == 230472
    assert smem_bytes(64, 192, 128) < 100 * 1024


def test_three_consumers_take_turns(fa3):
    """d 64, 192 x 128: three consumer warpgroups (512 threads); the turns go round 0 -> 1 -> 2
    on named barriers of 256 threads (owner's bar.sync + the previous one's bar.arrive), and
    each consumer's epilogue barrier is a 128-thread one after them."""
    for bf16 in (False, True):
        for causal in (False, True):
            sass, _ = fa3[(64, 192, 128, bf16, causal, False)]
            assert re.search(r"BAR\.SYNC\S*\s+\w+,\s*0x100\b", sass)
            assert re.search(r"BAR\.ARV\s+\w+,\s*0x100\b", sass)
            assert re.search(r"BAR\.SYNC\S*\s+\w+,\s*0x80\b", sass)


def test_wgmma_shapes_header_is_generated():
    """ptx/wgmma_shapes.cuh is what ptx/wgmma_shapes.py writes (edit the script, not it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("wgmma_shapes",
                                                  cuda.HERE / "ptx" / "wgmma_shapes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (cuda.HERE / "ptx" / "wgmma_shapes.cuh").read_text() == mod.render()
