"""Grader for chapter 04 (tl kernel): the tile loop under the Triton interpreter on CPU, and on
a Hopper GPU when there is one. Fresh random inputs each run; float64 reference."""
import numpy as np
import pytest

from exercises.grading import harness

RNG = np.random.default_rng()          # fresh inputs each grading run
EXTRA_CASES: dict = {}                 # name -> a maker of more cases (the hidden tests add theirs)


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
            "long": make(1, 70, 300, 32, (32, 64)),   # keys past 128, several row blocks
            **{n: f() for n, f in EXTRA_CASES.items()}}


def run(device="cpu"):
    """Every case, run once per device and submission: (cases, buffers per case)."""
    return harness.memo(__file__, ("tl", device), lambda: _run(device))


def _run(device):
    cs = cases()
    env = {"TRITON_INTERPRET": "1"} if device == "cpu" else {}
    student = harness.sandboxed(__file__, env=env, gpu=device != "cpu")
    try:
        outs = student.call("_run_kernel:run_cases", cs, device)
    except AssertionError as e:          # the submission's process failed or raised
        outs = {n: {"error": str(e)} for n in cs}
    finally:
        student.close()
    if not isinstance(outs, dict):
        outs = {n: {"error": f"the kernel run answered {type(outs).__name__}"} for n in cs}
    if device == "cpu":
        outs = {**outs, **_not_built(cs)}
    return cs, outs


def _not_built(cs):
    """{case: {"error": ...}} for each case whose constexprs (HEAD_DIM, BLOCK_M, BLOCK_N) the
    kernel does not compile with for sm_90a (`_run_kernel.compiles`, in a session without the
    interpreter): the interpreter runs a kernel body as Python, so a `break`, a Python object
    where a tensor goes or a `tl.dot` too small for the hardware comes out right there and fails
    to build for the GPU the kernel is for."""
    shapes = {n: (int(c["q"].shape[2]), int(c["blocks"][0]), int(c["blocks"][1]))
              for n, c in cs.items()}
    student = harness.sandboxed(__file__, env={}, gpu=False)
    try:
        errs = student.call("_run_kernel:compiles", shapes)
    except AssertionError as e:          # the compile's process failed or raised
        errs = {n: str(e) for n in cs}
    finally:
        student.close()
    if not isinstance(errs, dict):
        errs = {n: f"the compile answered {type(errs).__name__}" for n in cs}
    return {n: {"error": "the kernel does not compile for a Hopper GPU (Triton's front end, "
                         f"sm_90a; the interpreter runs it as Python):\n{errs.get(n)}"}
            for n in cs if errs.get(n, "no answer") is not None}


def _numpy_too_new() -> bool:
    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    return (major, minor) >= (2, 5)


def check(name, device="cpu", tol=2e-5, what=("o", "lse")):
    if device == "cpu" and _numpy_too_new():
        # Triton 3.6's interpreter turns 1-element arrays into Python scalars, which NumPy 2.5
        # refuses ("only 0-dimensional arrays can be converted"). The grader's environment cannot
        # run these tests: not graded here (as a GPU test without a GPU), not a point lost.
        pytest.skip(f"the Triton 3.6 interpreter needs numpy < 2.5 (the course pins numpy < 2.4); "
                    f"this environment has numpy {np.__version__}: pip install 'numpy<2.4'")
    cs, outs = run(device)
    got = outs.get(name)
    assert isinstance(got, dict), f"no result for case {name}"
    if "error" in got:
        pytest.fail(got["error"], pytrace=False)
    c = cs[name]
    B, Sq, D = c["q"].shape
    o, lse = np.asarray(got["o"]), np.asarray(got["lse"])
    assert o.ndim == 3 and o.shape[0] == B + 1 and o.shape[1] >= Sq and o.shape[2] == D, o.shape
    assert lse.shape == ((B + 1) * Sq,), lse.shape
    assert np.isnan(o[:, Sq:]).all() and np.isnan(o[B]).all(), (
        "the kernel wrote O rows past seqlen_q (an unmasked store)")
    assert np.isnan(lse[B * Sq:]).all(), "the kernel wrote LSE past the last row (unmasked store)"
    ref_o, ref_lse = reference(c["q"], c["k"], c["v"], float(c["scale"]))
    assert not np.isnan(o[:B, :Sq]).any(), (
        "NaN in O: a row was never written, or its sum came out 0 or inf (exp taken against "
        "something other than the running max of the scaled scores)")
    if "o" in what:
        np.testing.assert_allclose(o[:B, :Sq], ref_o, rtol=tol, atol=tol)
    if "lse" in what:
        np.testing.assert_allclose(lse[:B * Sq].reshape(B, Sq), ref_lse, rtol=tol, atol=tol)


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
    """CPU (interpreter): Sk = 50 and Sq = 37, not multiples of the block: masked keys; and a
    long one, Sk = 300 (five blocks of 64, the last ragged) for Sq = 70 (three blocks of 32)."""
    check("ragged")
    check("long")


@pytest.mark.gpu
@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_gpu_matches_reference():
    """Hopper GPU: the same cases compiled for real (tf32 dots: looser tolerance)."""
    for name in ("aligned", "ragged", "wide", "long"):
        check(name, device="cuda", tol=2e-2)
