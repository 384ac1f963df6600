"""Grader for chapter 02: the warp-specialized Gluon GEMM. The submission compiles its kernel for
sm_90a in its sandbox (on a CPU) and hands back the IR; the grader reads the loaders'/consumers'
protocol from the compiler's TTGIR (`protocol.py`: which barrier each partition waits on with
which parity, what it expects and copies from which box, in every k-step, only what runs; the
barriers' inits and whatever runs outside the k-loops; M, N, the tile's position and, in a
second reading, K as run-time values; in a third, a K that ends in a partial k-step), never from
text the submission could spell. On a Hopper
GPU, the submission's kernel runs on the grader's inputs."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from exercises.grading import harness

_spec = importlib.util.spec_from_file_location("ch02_protocol", Path(__file__).parent / "protocol.py")
protocol = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(protocol)
RNG = np.random.default_rng()          # fresh inputs each grading run
# the shared memory one block may use on an H100 or H200 (227 KiB): a kernel that asks for more
# compiles for sm_90a but does not launch
SMEM_LIMIT = 232_448


def _compile():
    try:
        k = harness.student(__file__).call("_compile:compile_submission")
    except AssertionError as e:        # the submission's process failed or raised
        return {"error": str(e)}
    return k if isinstance(k, dict) else {"error": f"the compile answered {type(k).__name__}"}


def compiled():
    """The submission's kernel compiled for sm_90a, once per submission."""
    k = harness.memo(__file__, "compiled", _compile)
    if "error" in k:
        pytest.fail("does not compile for sm_90a:\n" + str(k["error"])[-3000:], pytrace=False)
    return k


def violations(test):
    """The protocol rules of `test` that the compiled kernel breaks: {rule: messages}."""
    k = compiled()
    ir = k.get("ttgir_ws") or k.get("ttgir")
    if not isinstance(ir, str) or not isinstance(k.get("stages"), int) or \
            not isinstance(k.get("k_steps"), int):
        pytest.fail("the compile handed back no IR", pytrace=False)
    found = protocol.judge(ir, k["stages"], k["k_steps"], k.get("scalar_args"))
    return {r: found[r] for r in protocol.RULES_BY_TEST[test] if found.get(r)}


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_compiles_for_sm90a():
    """The kernel compiles for sm_90a: a warp_specialize of 2 consumer warpgroups and the
    loaders' warps (12 warps in all), in the shared memory a Hopper block may use (227 KiB)."""
    k = compiled()
    assert isinstance(k.get("ptx"), str) and ".target sm_90a" in k["ptx"]
    assert k.get("num_warps") == 12, (f"{k.get('num_warps')} warps: expected 8 consumer warps + 2 "
                                      "loaders, rounded to 12")
    shared = k.get("shared")
    assert isinstance(shared, int) and not isinstance(shared, bool), "the compile reported no " \
        "shared memory size"
    assert shared <= SMEM_LIMIT, (
        f"the kernel needs {shared} bytes of shared memory; an H100/H200 block may use at most "
        f"{SMEM_LIMIT} (227 KiB): it would not launch (a ring of fewer stages fits)")
    p = protocol.analyze(k.get("ttgir_ws") or k["ttgir"], k["stages"], k["k_steps"],
                         k.get("scalar_args"))
    assert p.found, "no warp_specialize in the kernel's IR"


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_producer_protocol():
    """Two loaders, one copying A and one copying B, each completing on its own full barrier;
    each, in every k-step it: waits on empty[it % S] with parity ((it // S) & 1) ^ 1, expects its
    tile's bytes on its full[it % S], then copies its tile into slot it % S from the k-step's box
    (A at [pid_x·BM, it·BK], B at [it·BK, pid_y·BN]), and does nothing else (read from the TTGIR:
    only ops that run count; one on a condition on M, N, K or the tile may run). Every barrier slot
    initialised once with count 1 before warp_specialize, nothing else run there."""
    bad = violations("test_producer_protocol")
    assert not bad, "\n".join(f"{r}: {m}" for r, ms in bad.items() for m in ms)


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_consumer_protocol():
    """The consumers, in every k-step it: wait on both full barriers of slot it % S (A's and B's)
    with parity (it // S) & 1 before their one wgmma reads the slot and adds to the running sum,
    and release the previous slot on empty once a wgmma wait has finished the wgmma that read it;
    after the loop, one store of C at [pid_x·BM, pid_y·BN] once every wgmma is done, C's staging
    buffer fenced and every thread past a barrier before it, and a tma.store_wait(0) after it;
    nothing else. The barriers' setup as in test_producer_protocol."""
    bad = violations("test_consumer_protocol")
    assert not bad, "\n".join(f"{r}: {m}" for r, ms in bad.items() for m in ms)


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_setmaxnreg():
    """warp_specialize with worker_num_regs moves registers: each loader gets fewer than the
    entry cap, the consumers more (what setmaxnreg.dec / .inc will set)."""
    bad = violations("test_setmaxnreg")
    assert not bad, "\n".join(f"{r}: {m}" for r, ms in bad.items() for m in ms)


# ragged M, N and K: TMA fills a box's part past the tensor with zeros, so a partial last
# k-step adds nothing but the products that are there; and one K of 41 k-steps, 13 laps of the
# 3-stage ring and a bit, so that a parity right for the first laps only is run past them on the
# GPU too (the others reach 8 k-steps at most)
SHAPES = ((256, 256, 512), (200, 136, 320), (1024, 512, 64), (136, 256, 200), (256, 128, 2600))


def _gpu_run(env=None):
    pairs = [(RNG.standard_normal((M, K)).astype(np.float16),
              RNG.standard_normal((K, N)).astype(np.float16)) for M, N, K in SHAPES]
    student = harness.sandboxed(__file__, env=env, gpu=True)
    try:
        return pairs, student.call("_gpu:run_gemm", pairs)
    finally:
        student.close()


def _check_products(pairs, cs):
    assert isinstance(cs, list) and len(cs) == len(pairs), "not one C per (A, B)"
    for (a, b), c in zip(pairs, cs):
        ref = a.astype(np.float64) @ b.astype(np.float64)
        c = np.asarray(c, dtype=np.float64)
        assert c.shape == ref.shape, c.shape
        assert not np.isnan(c).any(), "C has tiles the kernel never wrote"
        np.testing.assert_allclose(c, ref, rtol=2e-2, atol=5e-2 * a.shape[1] ** 0.5)


@pytest.mark.gpu
@pytest.mark.points(3)
@pytest.mark.timeout(300)
def test_gpu_correct():
    """Hopper GPU: C = A·B against a float64 product on random fp16 inputs, ragged M, N and K."""
    _check_products(*_gpu_run())


@pytest.mark.gpu
@pytest.mark.points(2)
@pytest.mark.timeout(420)
def test_gpu_consan():
    """Hopper GPU: Triton's concurrency sanitizer (ConSan) watches every mbarrier, TMA and wgmma
    of the kernel and aborts on a slot read before it landed or overwritten while still read: a
    missing wait fails here even when the race happens not to corrupt C."""
    _check_products(*_gpu_run({"TRITON_INSTRUMENTATION_MODE": "consan"}))
