"""Grader for chapter 02: the warp-specialized Gluon GEMM, compiled for sm_90a on CPU (PTX
checks), and run on a Hopper GPU when there is one."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_cache = {}


def compiled():
    """Compile once per grading process, in a subprocess; {'ptx', 'shared', 'num_warps'} or {'error'}."""
    if "k" not in _cache:
        try:
            p = subprocess.run([sys.executable, str(HERE / "_compile.py"), str(HERE / "ws_gemm.py")],
                               capture_output=True, text=True, timeout=240, check=False)
            lines = p.stdout.strip().splitlines()
            _cache["k"] = json.loads(lines[-1]) if lines else {"error": p.stderr[-3000:]}
        except subprocess.TimeoutExpired:
            _cache["k"] = {"error": "compile timed out (240 s)"}
        except json.JSONDecodeError:
            _cache["k"] = {"error": "the compile printed something that is not the result"}
    k = _cache["k"]
    assert "error" not in k, "does not compile for sm_90a:\n" + k["error"]
    return k


def count(ptx, pattern):
    return len(re.findall(pattern, ptx))


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_compiles_for_sm90a():
    """The kernel compiles for sm_90a with 3 warpgroups (2 consumer warpgroups + the producer's)."""
    k = compiled()
    assert ".target sm_90a" in k["ptx"]
    assert k["num_warps"] == 12, f"{k['num_warps']} warps: expected 8 consumer warps + 1 producer, rounded to 12"
    assert count(k["ptx"], r"wgmma\.mma_async") >= 1


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_producer_issues_tma():
    """The producer loads A and B with TMA, tracked by expect-tx bytes on the full barrier."""
    ptx = compiled()["ptx"]
    loads = count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global")
    assert loads >= 2, f"{loads} TMA load(s): expected one for A and one for B"
    assert count(ptx, r"mbarrier\.arrive\.expect_tx") >= 1, "TMA not tracked by expect-tx bytes"


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_both_roles_wait():
    """The producer waits on empty and the consumers wait on full (two mbarrier.try_wait loops)."""
    waits = count(compiled()["ptx"], r"mbarrier\.try_wait\.parity")
    assert waits >= 2, (f"{waits} mbarrier wait(s): the producer must wait for a free slot and the "
                        "consumers for a landed one")


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_setmaxnreg():
    """warp_specialize with worker_num_regs moves registers: setmaxnreg.dec and .inc."""
    ptx = compiled()["ptx"]
    assert count(ptx, r"setmaxnreg\.dec") >= 1 and count(ptx, r"setmaxnreg\.inc") >= 1, "no setmaxnreg"


@pytest.mark.gpu
@pytest.mark.points(3)
@pytest.mark.timeout(300)
def test_gpu_correct():
    """Hopper GPU: C = A·B against torch on random fp16 inputs, ragged M and N included."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("submission_ws_gemm_gpu", HERE / "ws_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for M, N, K in ((256, 256, 512), (200, 136, 320), (1024, 512, 64)):
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        c = mod.gemm(a, b)
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        torch.testing.assert_close(c.double(), ref, rtol=2e-2, atol=5e-2 * K ** 0.5)


CONSAN = """
import importlib.util, sys, torch, triton
triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
spec = importlib.util.spec_from_file_location("submission_ws_gemm_consan", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
for M, N, K in ((256, 256, 512), (200, 136, 320)):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = mod.gemm(a, b)
    torch.cuda.synchronize()
    err = ((c.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm()).item()
    assert err < 1e-2, (M, N, K, err)
print("consan clean")
"""


@pytest.mark.gpu
@pytest.mark.points(2)
@pytest.mark.timeout(420)
def test_gpu_consan(tmp_path):
    """Hopper GPU: Triton's concurrency sanitizer (ConSan) watches every mbarrier, TMA and wgmma
    of the kernel and traps on a slot read before it landed or overwritten while still read: a
    missing wait fails here even when the race happens not to corrupt C."""
    import os

    env = dict(os.environ, TRITON_INSTRUMENTATION_MODE="consan",
               TRITON_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", CONSAN, str(HERE / "ws_gemm.py")], env=env,
                       capture_output=True, text=True, timeout=400, check=False)
    assert p.returncode == 0 and "consan clean" in p.stdout, (
        "ConSan found a protocol error (or the run failed):\n" + (p.stdout + p.stderr)[-3000:])
