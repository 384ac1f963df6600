"""A schedule beside its kernel (`fidelity.pairs`): each model consumer takes the kernel's steps,
in the kernel's order, and the listing that says so can tell when they do not."""
import ast
import difflib
import inspect
import textwrap

import pytest

from fidelity.pairs import ROOT, Source, attention_pairs, gemm_pairs, steps

PAIRS = {**{f"attention {v}": p for v, p in attention_pairs().items()},
         **{f"gemm {v}": p for v, p in gemm_pairs().items()}}


def listings(variant):
    """The model's listing and the kernel's."""
    model, model_switches, kernel, kernel_switches = PAIRS[variant]
    return steps(model, **model_switches), steps(kernel, **kernel_switches)


@pytest.mark.parametrize("variant", PAIRS)
def test_model_takes_the_kernels_steps(variant):
    model, kernel = listings(variant)
    assert model == kernel


def test_overlapped_listing_is_the_kernels_shape():
    """fa3 as the kernel compiles it: block 0 peeled, the loop over 1..n-1 with the two GEMMs
    issued back to back and P·V's wait after the softmax (FENCE), the last P·V after it; every
    turn passed once its GEMMs are issued, before their wait; the waits listed."""
    _, kernel = listings("attention fa3")
    loop = kernel.index("for j:")
    assert kernel[:loop] == ["wait_q", "acquire k", "wait_turn", "qk", "pass_turn", "wait_qk",
                             "release k", "softmax", "pack"]
    body = [s.strip() for s in kernel if s.startswith("    ")]
    assert body == ["acquire k", "acquire v", "wait_turn", "qk", "pv", "pass_turn", "wait_qk",
                    "release k", "softmax", "wait_pv", "rescale", "pack"]
    assert kernel[loop + 1 + len(body):] == ["acquire v", "wait_turn", "pv", "pass_turn",
                                             "wait_pv", "epilogue"]
    # overlap: the same without the turns
    _, overlap = listings("attention overlap")
    assert overlap == [s for s in kernel if s.strip() not in ("wait_turn", "pass_turn")]


def test_a_moved_step_is_seen():
    for variant in PAIRS:
        model, kernel = listings(variant)
        moved = list(kernel)
        i = next(i for i in range(len(moved) - 1) if moved[i] != moved[i + 1])
        moved[i], moved[i + 1] = moved[i + 1], moved[i]
        assert moved != kernel
        assert sorted(moved) == sorted(kernel)      # the same steps, one out of place


# variant -> (the loop a step is gained in; the step as the model writes it, as the kernel does;
# its line in the listing)
GAINED = {
    "attention fa3": ("for j in range(", "yield from cta.wait_qk(None)", "t.wait_qk(None)",
                      "    wait_qk"),
    "attention ws_pingpong": ("for j in range(", "yield from cta.wait_qk(None)",
                              "t.wait_qk(None)", "    wait_qk"),
    "attention ws producer": ("for j in range(", "yield from cta.wait_qk(None)",
                              "t.wait_qk(None)", "    wait_qk"),
    "gemm ws": ("for ki in range(", "yield from cta.wait_mma(None)", "t.wait_mma(None, 1)",
                "        wait_mma"),
    "gemm ws_pingpong": ("for ki in range(", "cta.release(cta.ab, 0)", "ab.release(0)",
                         "        release ab"),
    "gemm ws producer": ("for k in range(", "yield from cta.wait_mma(None)",
                         "t.wait_mma(None, 1)", "        wait_mma"),
}


@pytest.mark.parametrize("variant", GAINED)
@pytest.mark.parametrize("side", ["model", "kernel"])
def test_a_gained_step_is_seen(tmp_path, variant, side):
    """One side gains a step the other lacks (a wait, a release): the listings differ by exactly
    that line, so `test_model_takes_the_kernels_steps` fails on it."""
    model, model_switches, kernel, kernel_switches = PAIRS[variant]
    fn = model if side == "model" else kernel
    src = inspect.getsource(getattr(fn, "fn", fn)) if side == "model" else \
        (ROOT / fn.path).read_text()
    name = fn.__name__ if side == "model" else fn.name
    lines = src.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    loop, model_step, kernel_step, listed = GAINED[variant]
    at = next(i for i, line in enumerate(lines) if i > start and line.lstrip().startswith(loop))
    indent = " " * (len(lines[at + 1]) - len(lines[at + 1].lstrip()))
    extra = model_step if side == "model" else kernel_step
    lines.insert(at + 1, indent + extra)
    path = tmp_path / "gained.py"
    path.write_text(textwrap.dedent("\n".join(lines)))
    gained = steps(Source(str(path), name), **(model_switches if side == "model" else kernel_switches))
    other = listings(variant)[1 if side == "model" else 0]
    assert gained != other
    added = [d for d in difflib.ndiff(other, gained) if d.startswith(("+ ", "- "))]
    assert added == ["+ " + listed]


def test_one_spelling_for_each_switch():
    """Each switch the model's overlapped consumer takes is the kernel's constexpr of the same
    name upper-cased, a field of the consumers' `Tile`."""
    from fidelity.pairs import SHARED_SWITCHES, kernel_switches
    from sim.attention import overlap
    assert kernel_switches({"one_release": True, "producer": True}) == {"ONE_RELEASE": True}
    keywords = set(inspect.signature(overlap.consumer).parameters) - {"cta", "w", "producer"}
    assert keywords <= set(SHARED_SWITCHES)
    tile = ast.parse((ROOT / "kernels/attention/tile.py").read_text())
    fields = {n.target.id for c in tile.body if isinstance(c, ast.ClassDef) and c.name == "Tile"
              for n in c.body if isinstance(n, ast.AnnAssign)}
    assert {k.upper() for k in SHARED_SWITCHES} <= fields


def test_the_kernel_is_read_not_imported():
    """The listing of a kernel comes from its file: the pairs need no triton (a student's copy
    without the kernels' requirements still diffs them), and it is the imported function's."""
    pytest.importorskip("triton")
    from kernels.attention import ws as kernel
    assert steps(Source("kernels/attention/ws.py", "consumer"), TURNS=True) == \
        steps(kernel.consumer, TURNS=True)


def test_the_fence_switch_moves_the_wait_for_pv():
    """The kernel's FENCE decides where `wait_pv` is listed, the model's `fence` likewise."""
    from sim.attention import overlap as model
    kernel = Source("kernels/attention/overlap.py", "consumer")
    hoisted = dict(TURNS=True, FENCE="hoisted", HOISTED="hoisted")
    body = [s.strip() for s in steps(kernel, **hoisted) if s.startswith("    ")]
    assert body.index("wait_pv") < body.index("softmax")
    body = [s.strip() for s in steps(model.consumer, turns=True, fence=False)
            if s.startswith("    ")]
    assert body.index("wait_pv") < body.index("softmax")
    assert "pack" not in body                       # packed among the softmax's exps


def tiny(cta, me, w, n, TURNS):
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(n):
        yield from cta.acquire(me, cta.k, j)
        if TURNS:                                   # decided by the switch
            yield from cta.wait_turn(w, j)
        else:
            cta.note("no turns")                    # not a step: not listed
        s = cta.qk(w, j)
        if j > 0:                                   # not a switch: both branches listed
            cta.release(cta.k_ring, j)
        else:
            cta.pv(w, j)
        p, alpha = cta.softmax(s)
    cta.epilogue(w)


def test_steps_of_a_tiny_function():
    assert steps(tiny, TURNS=True) == [
        "wait q_full", "for j:", "    acquire k", "    wait_turn", "    qk", "    release k",
        "    pv", "    softmax", "epilogue"]
    assert steps(tiny, TURNS=False) == [
        "wait q_full", "for j:", "    acquire k", "    qk", "    release k", "    pv",
        "    softmax", "epilogue"]
    # undecided, `if TURNS:` lists both its branches
    assert steps(tiny) == steps(tiny, TURNS=True)
