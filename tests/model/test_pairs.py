"""A schedule beside its kernel (`fidelity.pairs`): each model consumer takes the kernel's steps,
in the kernel's order, and the listing that says so can tell when they do not."""
import pytest

from fidelity.pairs import Source, attention_pairs, gemm_pairs, steps

PAIRS = {**{f"attention {v}": p for v, p in attention_pairs().items()},
         **{f"gemm {v}": p for v, p in gemm_pairs().items()}}


def listings(variant):
    model, model_switches, kernel, kernel_switches = PAIRS[variant]
    return steps(model, **model_switches), steps(kernel, **kernel_switches)


@pytest.mark.parametrize("variant", PAIRS)
def test_model_takes_the_kernels_steps(variant):
    model, kernel = listings(variant)
    assert model == kernel


def test_overlapped_listing_is_the_kernels_shape():
    """fa3 as the kernel compiles it: block 0 peeled, the loop over 1..n-1 with the two GEMMs
    issued back to back and P·V's wait after the softmax (FENCE), the last P·V after it."""
    _, kernel = listings("attention fa3")
    loop = kernel.index("for j:")
    assert kernel[:loop] == ["wait q_full", "acquire k", "wait_turn", "qk", "pass_turn",
                             "release k", "softmax", "pack"]
    body = [s.strip() for s in kernel if s.startswith("    ")]
    assert body == ["acquire k", "acquire v", "wait_turn", "qk", "pv", "pass_turn", "release k",
                    "softmax", "wait_pv", "rescale", "pack"]
    assert kernel[loop + 1 + len(body):] == ["acquire v", "wait_turn", "pv", "pass_turn",
                                             "release v", "epilogue"]
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


def test_the_kernel_is_read_not_imported():
    """The listing of a kernel comes from its file: the pairs need no triton (a student's copy
    without the kernels' requirements still diffs them), and it is the imported function's."""
    pytest.importorskip("triton")
    from kernels.attention import ws as kernel
    assert steps(Source("kernels/attention/ws.py", "consumer"), TURNS=True, REFILL=0) == \
        steps(kernel.consumer, TURNS=True, REFILL=0)


def test_the_fence_switch_moves_the_wait_for_pv():
    """The kernel's FENCE decides where `wait_pv` is listed, the model's `fence` likewise."""
    from sim.attention import overlap as model
    kernel = Source("kernels/attention/overlap.py", "consumer")
    hoisted = dict(TURNS=True, REFILL=0, FENCE="hoisted", HOISTED="hoisted")
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
