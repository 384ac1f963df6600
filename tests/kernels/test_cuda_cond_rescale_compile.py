"""CPU-only checks of the CUDA fa3 twin's conditional rescaling (FlashAttention-4's; the switch
COND_RESCALE of attention_fa3_kernel, kernels/cuda/attention.cuh): in the SASS of the switch
build, each consumer loop votes once (VOTE.ANY) and its O *= alpha FMULs (d / 2 a thread) sit
behind a forward branch on that vote, so a warp whose rows all kept their max skips them; the
default build has no vote and runs its FMULs unconditionally. Registers and spills of every
build: tests/kernels/test_cuda_tiles_compile.py; the numbers on a GPU:
tests/kernels/test_cuda_cond_rescale_gpu.py."""
from __future__ import annotations

import itertools
import re

import pytest

from kernels import cuda
from kernels.cuda import compile as cc

torch = pytest.importorskip("torch")  # only for the entry point's errors, on CPU tensors


@pytest.fixture(scope="module")
def instances():
    """{(d, bm, bn, bf16, causal, cond_rescale): SASS as [(address, instruction)]}."""
    nvcc = cc.find_nvcc()
    assert nvcc is not None, "no nvcc: `pip install -e .[dev]` brings the nvidia-cuda-nvcc wheel"
    # (the persistent ones are built without conditional rescaling: test_cuda_persistent_compile)
    return {key[:6]: [(int(a, 16), t) for a, t in
                      re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", sass)]
            for key, (sass, _) in cc.fa3_builds(nvcc).items() if not key[6]}


def branch(text: str) -> tuple[bool, int] | None:
    """(predicated?, target address) of a BRA, or None."""
    m = re.match(r"(@!?U?P\d+\s+)?BRA(?:\.\S+)?\s+(0x[0-9a-f]+)", text)
    return None if m is None else (m.group(1) is not None, int(m.group(2), 16))


def consumer_loop(ins: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The overlapped loop: from the target of the backward branch that closes it to that branch
    (the one loop whose body waits for the scores with P V still running, gsb0 0x1)."""
    index = {a: i for i, (a, _) in enumerate(ins)}
    for i, (addr, text) in enumerate(ins):
        b = branch(text)
        if b and b[1] < addr and b[1] in index:
            body = ins[index[b[1]]:i + 1]
            if any("DEPBAR.LE gsb0, 0x1" in t for _, t in body):
                return body
    raise AssertionError("no consumer loop")


def rescale_fmuls(loop: list[tuple[int, str]]) -> list[int]:
    """Addresses of the FMULs after the loop's wait for P V (WARPGROUP.DEPBAR.LE gsb0, 0x0):
    O *= alpha, the only multiplies there (the pack is F2FP)."""
    start = next(i for i, (_, t) in enumerate(loop) if "DEPBAR.LE gsb0, 0x0" in t)
    return [a for a, t in loop[start:] if re.match(r"(@!?P\d+\s+)?FMUL\b", t)]


def skipped_ranges(loop: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """[branch, target) of every predicated forward branch within the loop (not the mbarrier
    waits' branches out to their retry loops, placed after the kernel's end)."""
    out = []
    for addr, text in loop:
        b = branch(text)
        if b and b[0] and addr < b[1] <= loop[-1][0]:
            out.append((addr, b[1]))
    return out


COND = [(d, bm, bn, bf16, causal) for d in cuda.COND_RESCALE_DIMS
        for bm, bn in cuda.ATTENTION_TILES[d]
        for bf16, causal in itertools.product((False, True), (False, True))]


def test_built_at_every_tile_of_its_dims(instances):
    cond = {k[:5] for k, _ in instances.items() if k[5]}
    assert cond == set(COND)
    assert cuda.COND_RESCALE_DIMS == (128,)  # attention_fa3.cu: cond_rescale_built(d)


IDS = [f"d{d}-{bm}x{bn}-{'bf16' if b else 'fp16'}-{'causal' if c else 'full'}"
       for d, bm, bn, b, c in COND]


@pytest.mark.parametrize("d,bm,bn,bf16,causal", COND, ids=IDS)
def test_vote_guards_the_rescale(instances, d, bm, bn, bf16, causal):
    """Switch build: one VOTE.ANY per loop iteration, and all d / 2 O-rescale FMULs inside one
    predicated forward branch's skipped range, which holds no other instruction kind than the
    FMULs (nothing else is lost when the warp skips). Default build of the same instance: no
    VOTE.ANY, the same d / 2 FMULs, and no branch around them."""
    loop = consumer_loop(instances[(d, bm, bn, bf16, causal, True)])
    assert sum(t.startswith("VOTE.ANY") for _, t in loop) == 1
    fmuls = rescale_fmuls(loop)
    assert len(fmuls) == d // 2
    guards = [(lo, hi) for lo, hi in skipped_ranges(loop) if all(lo < a < hi for a in fmuls)]
    assert len(guards) == 1, guards
    lo, hi = guards[0]
    inside = [t for a, t in loop if lo < a < hi]
    assert {t.split()[0] for t in inside} == {"FMUL"}, inside

    plain = instances[(d, bm, bn, bf16, causal, False)]
    # (ptxas's own VOTEU.ALL, for its uniform datapath, is in the plain 128 x 176 build too)
    assert not any(t.startswith("VOTE.ANY") for _, t in plain)
    loop = consumer_loop(plain)
    fmuls = rescale_fmuls(loop)
    assert len(fmuls) == d // 2
    assert not [(lo, hi) for lo, hi in skipped_ranges(loop) if any(lo < a < hi for a in fmuls)]


@pytest.mark.parametrize("d,bm,bn", [(d, bm, bn) for d in cuda.COND_RESCALE_DIMS
                                     for bm, bn in cuda.ATTENTION_TILES[d]])
def test_the_vote_costs_a_few_instructions(instances, d, bm, bn):
    """The switch adds at most 16 instructions to the loop body (the compare with the old max,
    its select, the vote, the branch: 13 at both d 128 tiles with nvcc 13), against the d / 2
    FMULs a skipping warp does not issue."""
    for bf16, causal in itertools.product((False, True), (False, True)):
        plain = consumer_loop(instances[(d, bm, bn, bf16, causal, False)])
        cond = consumer_loop(instances[(d, bm, bn, bf16, causal, True)])
        assert 0 < len(cond) - len(plain) <= 16, (len(plain), len(cond))


def test_entry_point_refuses_other_dims():
    q = torch.randn(1, 2, 64, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="cond_rescale is built at head dim"):
        cuda.attention(q, q, q, cond_rescale=True)
    with pytest.raises(TypeError, match="cond_rescale must be a bool"):
        cuda.attention(q, q, q, cond_rescale=1)
