"""CPU-only checks of the CUDA fa3 twin's persistent launch (attention_fa3_kernel<..., PERSISTENT>,
kernels/cuda/attention_fa3.cu; kernels.cuda.PERSISTENT_TILES): every tile it is built at
compiles for sm_90a with the wgmmas of its plain build, no spills and registers under the
consumers' cap; its consumers take no turns (no bar.arrive, no 256-thread named barrier) and
hand the Q buffer back (the arrive on q_empty) only after the wait for the O store to have read
it; the softmax still runs under its own P V. And the plain builds, which the switch must leave
alone, still compile to the same SASS (hashes below). The numbers on a GPU:
tests/kernels/test_cuda_persistent_gpu.py."""
from __future__ import annotations

import collections
import hashlib
import itertools
import re

import pytest

from kernels import cuda
from kernels.cuda import compile as cc

SMEM_LIMIT = 227 * 1024
STAGES = 2
# The SASS of every plain instance (d, bm, bn, bf16, causal, cond_rescale): sha256 of its
# instructions (addresses and function name left out), first 16 hex digits, with the nvcc
# release below. The instances but d 64's 128x128 hash as they did before the PERSISTENT switch
# existed. A change to the plain kernel re-records them (and says why); another nvcc skips.
NVCC_RELEASE = "V13.0.88"
PLAIN_SASS = {
    (128, 128, 128, False, False, False): "c53e68860e003263",
    (128, 128, 128, False, False, True): "d603a00172ab1e4a",
    (128, 128, 128, False, True, False): "fd5ea108b489f5e3",
    (128, 128, 128, False, True, True): "6efd47102e8491da",
    (128, 128, 128, True, False, False): "e805e9559038ade5",
    (128, 128, 128, True, False, True): "330a4aadaa6a7015",
    (128, 128, 128, True, True, False): "591004962c189d57",
    (128, 128, 128, True, True, True): "11b131e472385b7b",
    (128, 128, 176, False, False, False): "d68350eb4761ac76",
    (128, 128, 176, False, False, True): "f0ce4c76eec5f747",
    (128, 128, 176, False, True, False): "1f72eca38fcbe3dd",
    (128, 128, 176, False, True, True): "4c66833c069402fa",
    (128, 128, 176, True, False, False): "664b6d1728eb6d2d",
    (128, 128, 176, True, False, True): "5f706e4e7f8661f0",
    (128, 128, 176, True, True, False): "b493490a2d49cfa7",
    (128, 128, 176, True, True, True): "f1dc62025d4d9914",
    (256, 128, 64, False, False, False): "7bc1595d37173b32",
    (256, 128, 64, False, True, False): "c2b8d76aa9f87069",
    (256, 128, 64, True, False, False): "f7b8ce2ef471b579",
    (256, 128, 64, True, True, False): "f284060be1d4d983",
    (256, 128, 80, False, False, False): "b9156546cf2221a7",
    (256, 128, 80, False, True, False): "53835eeb322af616",
    (256, 128, 80, True, False, False): "a1a09576c732bdd3",
    (256, 128, 80, True, True, False): "51af728a34540b41",
    (64, 128, 128, False, False, False): "b868e11012e35f53",
    (64, 128, 128, False, True, False): "1be4eada743c13a1",
    (64, 128, 128, True, False, False): "4618b150d20cd5d7",
    (64, 128, 128, True, True, False): "f86898f1ccbff719",
    (64, 192, 128, False, False, False): "c79ff20a7de3b86c",
    (64, 192, 128, False, True, False): "a845eafb3cd95b9a",
    (64, 192, 128, True, False, False): "d626a68f044c7775",
    (64, 192, 128, True, True, False): "5bbdda6cc1c0f35b",
}
PERSISTENT = [(d, bm, bn) for d, tiles in cuda.PERSISTENT_TILES.items() for bm, bn in tiles]
IDS = [f"d{d}-{bm}x{bn}" for d, bm, bn in PERSISTENT]


def instructions(sass: str) -> list[str]:
    return re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", sass)


@pytest.fixture(scope="module")
def built():
    """(nvcc, {(d, bm, bn, bf16, causal, cond_rescale, persistent): (SASS, ptxas lines)})."""
    nvcc = cc.find_nvcc()
    assert nvcc is not None, "no nvcc: `pip install -e .[dev]` brings the nvidia-cuda-nvcc wheel"
    return nvcc, cc.fa3_builds(nvcc)


def test_persistent_tiles():
    """Built at tiles the plain twin has too (the bit-identical GPU test compares the two); d 64's
    128x128 is the Gluon fa3's persistent tile there (host.SHORT_TILE)."""
    from kernels.attention import host

    for d, tiles in cuda.PERSISTENT_TILES.items():
        assert set(tiles) <= set(cuda.ATTENTION_TILES[d]), d
    assert host.SHORT_TILE[64] in cuda.PERSISTENT_TILES[64]
    assert cuda.ATTENTION_TILES[64][0] == (192, 128)  # the plain default stays FA3's


def test_every_persistent_instance_is_built(built):
    _, inst = built
    got = {k[:5] for k in inst if k[6]}
    want = {(d, bm, bn, bf16, causal) for d, bm, bn in PERSISTENT
            for bf16, causal in itertools.product((False, True), (False, True))}
    assert got == want
    assert not any(k[5] for k in inst if k[6])  # no conditional rescaling


@pytest.mark.parametrize("d,bm,bn", PERSISTENT, ids=IDS)
def test_persistent_wgmmas_and_registers(built, d, bm, bn):
    """The plain build's wgmmas (D / 16 of n = BN for Q K^T, twice in the code; BN / 16 of n = d
    for P V, twice), no spills or local memory, every register under the consumers' cap (240
    with 2 consumer warpgroups, 160 with 3), setmaxnreg kept."""
    _, inst = built
    cap = 240 if bm == 128 else 160
    for bf16, causal in itertools.product((False, True), (False, True)):
        sass, ptxas = inst[(d, bm, bn, bf16, causal, False, True)]
        got = collections.Counter(int(n) for n in re.findall(r"HGMMA\.64x(\d+)x16\.F32", sass))
        want = collections.Counter()
        want[bn] += 2 * (d // 16)
        want[d] += 2 * (bn // 16)
        assert got == want, (d, bm, bn, bf16, causal, dict(got))
        assert "0 bytes spill stores, 0 bytes spill loads" in ptxas, ptxas
        assert "0 bytes stack frame" in ptxas, ptxas
        assert "LDL" not in sass and "STL" not in sass
        assert re.search(rf"USETMAXREG\.TRY_ALLOC\.CTAPOOL \w+, {cap:#x}\b", sass), cap
        assert re.search(r"USETMAXREG\.DEALLOC\.CTAPOOL 0x18\b", sass)
        highest = max(int(r) for r in re.findall(r"\bR(\d+)\b", sass))
        assert highest < cap, (d, bm, bn, highest, cap)


@pytest.mark.parametrize("d,bm,bn", PERSISTENT, ids=IDS)
def test_persistent_takes_no_turns(built, d, bm, bn):
    """No turns: no bar.arrive and no 256-thread named barrier; the epilogue's 128-thread one
    stays. The softmax's exps (BN / 2 + 2 a thread) still lie between the wait for the scores and
    the wait for P V."""
    _, inst = built
    for bf16, causal in itertools.product((False, True), (False, True)):
        sass, _ = inst[(d, bm, bn, bf16, causal, False, True)]
        assert "BAR.ARV" not in sass
        assert not re.search(r"BAR\.SYNC\S*\s+\w+,\s*0x100\b", sass)
        assert re.search(r"BAR\.SYNC\S*\s+\w+,\s*0x80\b", sass)
        assert cc.softmax_under_pv(sass) == [bn // 2 + 2], (d, bm, bn, bf16, causal)


@pytest.mark.parametrize("d,bm,bn", PERSISTENT, ids=IDS)
def test_q_goes_back_after_the_store_read_it(built, d, bm, bn):
    """O is staged in Q's rows, so the arrive on q_empty (the mbarrier after q_full and the
    rings' 4 x STAGES) comes after the O store (UTMASTG) and the wait for its reads
    (cp.async.bulk.wait_group.read 0: DEPBAR.LE SB0, 0x0), and it is the only arrive there."""
    _, inst = built
    q_empty = bm * d * 2 + 2 * STAGES * bn * d * 2 + (1 + 4 * STAGES) * 8
    for bf16, causal in itertools.product((False, True), (False, True)):
        ins = instructions(inst[(d, bm, bn, bf16, causal, False, True)][0])
        arrives = [i for i, t in enumerate(ins) if "SYNCS.ARRIVE" in t and f"+{q_empty:#x}]" in t]
        assert len(arrives) == 1, (d, bm, bn, [ins[i] for i in arrives])
        store = max(i for i, t in enumerate(ins) if t.startswith("UTMASTG"))
        read = next(i for i in range(store, len(ins)) if ins[i].startswith("DEPBAR.LE SB0, 0x0"))
        assert store < read < arrives[0], (store, read, arrives)


@pytest.mark.parametrize("d,bm,bn", PERSISTENT, ids=IDS)
def test_persistent_shared_memory_fits(d, bm, bn):
    """attention_fa3.cu's smem_bytes<T, STAGES, true>(): one mbarrier (q_empty) more than the
    plain build's; d 256 at 128 x 80 the largest, 230,480 bytes of 232,448."""
    smem = 1024 + bm * d * 2 + 2 * STAGES * bn * d * 2 + (2 + 4 * STAGES) * 8
    assert smem <= SMEM_LIMIT, smem


def test_plain_sass_is_unchanged(built):
    """Every plain instance's instructions hash as recorded (PLAIN_SASS)."""
    nvcc, inst = built
    if NVCC_RELEASE not in cc._version(nvcc):
        pytest.skip(f"PLAIN_SASS was recorded with nvcc {NVCC_RELEASE}")
    got = {k[:6]: hashlib.sha256("\n".join(instructions(sass)).encode()).hexdigest()[:16]
           for k, (sass, _) in inst.items() if not k[6]}
    assert got == PLAIN_SASS


# ---------------------------------------------------------------- entry point (CPU tensors)
def test_entry_point_checks_the_persistent_arguments():
    torch = pytest.importorskip("torch")
    q = torch.randn(1, 2, 64, 128, dtype=torch.float16)
    with pytest.raises(TypeError, match="persistent must be a bool"):
        cuda.attention(q, q, q, persistent="pairs")
    with pytest.raises(ValueError, match="persistent=True is built at head dim 128 for tiles"):
        cuda.attention(q, q, q, persistent=True, tile="fa3")
    with pytest.raises(ValueError, match="cond_rescale has no persistent build"):
        cuda.attention(q, q, q, persistent=True, cond_rescale=True)
    with pytest.raises(ValueError, match="pass it with persistent=True"):
        cuda.attention(q, q, q, sms=4)
    with pytest.raises(ValueError, match="sms must be a positive int"):
        cuda.attention(q, q, q, persistent=True, sms=0)
    with pytest.raises(ValueError, match="CUDA device"):
        cuda.attention(q, q, q, persistent=True, sms=4)
