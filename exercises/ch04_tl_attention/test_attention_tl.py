"""Grader for chapter 04 (tl kernel): the tile loop under the Triton interpreter on CPU, and on
a Hopper GPU when there is one. Fresh random inputs each run; float64 reference."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
RNG = np.random.default_rng()
_cache = {}


def reference(q, k, v, scale):
    s = np.einsum("bqd,bkd->bqk", q.astype(np.float64), k.astype(np.float64)) * scale
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64), m[..., 0] + np.log(p.sum(-1))


def make(B, Sq, Sk, D, blocks, spread=1.0, scale=None, dtype=np.float32):
    q, k, v = (RNG.normal(0, spread, (B, S, D)).astype(dtype) for S in (Sq, Sk, Sk))
    return {"q": q, "k": k, "v": v, "scale": np.float64(scale or D ** -0.5), "blocks": np.array(blocks)}


def cases():
    return {"aligned": make(2, 64, 64, 32, (16, 16)),
            "ragged": make(2, 37, 50, 32, (16, 16)),
            "wide": make(1, 48, 96, 64, (16, 32)),
            "large": make(2, 32, 80, 16, (16, 16), spread=6.0, scale=1.0)}


def run(device="cpu"):
    """Run every case once per device in a subprocess; (cases, outputs, errors per case)."""
    if device in _cache:
        return _cache[device]
    cs = cases()
    if device == "cpu" and _numpy_too_new():
        # Triton 3.6's interpreter turns 1-element arrays into Python scalars, which NumPy 2.5
        # refuses ("only 0-dimensional arrays can be converted"): name the fix, not the symptom.
        why = (f"the Triton 3.6 interpreter needs numpy < 2.5 (the course pins numpy < 2.4); "
               f"this environment has numpy {np.__version__}: pip install 'numpy<2.4'")
        _cache[device] = (cs, {}, dict.fromkeys(cs, why))
        return _cache[device]
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    inp, out = tmp / f"attn-cases-{os.getpid()}-{device}.npz", tmp / f"attn-out-{os.getpid()}-{device}.npz"
    np.savez(inp, **{f"{n}/{k}": v for n, c in cs.items() for k, v in c.items()})
    env = dict(os.environ)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    try:
        p = subprocess.run([sys.executable, str(HERE / "_run_kernel.py"), str(HERE / "attention_tl.py"),
                            str(inp), str(out), device], env=env, capture_output=True, text=True,
                           timeout=240, check=False)
        if p.returncode:
            errors = {n: p.stderr[-3000:] or p.stdout[-3000:] for n in cs}
            outs = {}
        else:
            errors = json.loads(p.stdout.strip().splitlines()[-1])
            outs = dict(np.load(out))
    except subprocess.TimeoutExpired:
        errors, outs = {n: "the kernel run timed out (240 s)" for n in cs}, {}
    _cache[device] = (cs, outs, errors)
    return _cache[device]


def _numpy_too_new() -> bool:
    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    return (major, minor) >= (2, 5)


def check(name, device="cpu", tol=2e-5, what=("o", "lse")):
    cs, outs, errors = run(device)
    assert name not in errors, errors[name]
    c = cs[name]
    ref_o, ref_lse = reference(c["q"], c["k"], c["v"], float(c["scale"]))
    if "o" in what:
        np.testing.assert_allclose(outs[f"{name}/o"], ref_o, rtol=tol, atol=tol)
    if "lse" in what:
        np.testing.assert_allclose(outs[f"{name}/lse"], ref_lse, rtol=tol, atol=tol)


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_interpreter_matches_reference():
    """CPU (interpreter): O for a sequence that fills whole blocks, two tile shapes."""
    check("aligned", what=("o",))
    check("wide", what=("o",))


@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_interpreter_lse():
    """CPU (interpreter): the log-sum-exp per row."""
    check("aligned", what=("lse",))


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_interpreter_ragged():
    """CPU (interpreter): Sk = 50 and Sq = 37, not multiples of the block: masked keys."""
    check("ragged")


### BEGIN HIDDEN TESTS
@pytest.mark.points(1)
@pytest.mark.timeout(300)
def test_interpreter_large_scores():
    """CPU (interpreter): scores of ±100 — exp must be taken against the running max."""
    check("large", tol=3e-4)         # float32 against float64 at |s| ~ 100: ~3e-5 seen
### END HIDDEN TESTS


@pytest.mark.gpu
@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_gpu_matches_reference():
    """Hopper GPU: the same cases compiled for real (tf32 dots: looser tolerance)."""
    for name in ("aligned", "ragged", "wide"):
        check(name, device="cuda", tol=2e-2)
