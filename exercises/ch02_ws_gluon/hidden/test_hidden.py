"""Hidden tests of chapter 02's Gluon GEMM (never released): the protocol over many laps of the
ring, read from the same compiled IR with K drawn each run, and a ring deep enough to run."""
import random

import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_ws_gemm.py")
rng = random.SystemRandom()                      # drawn afresh each grading run
LAPS = rng.randint(9, 20)


def _longer_k(k: dict, k_steps: int) -> list:
    """The compile's scalar arguments with K set to `k_steps` k-steps: the IR is the same for
    every K (it is a run-time shape), only the loop bounds the analysis evaluates change. The
    arguments are (descriptor, shape, strides) for A (BM × K: K is its shape[1] and stride[0]),
    B (K × BN: shape[0]) and C."""
    args = list(k.get("scalar_args") or [])
    old = args[2] if len(args) > 6 else None
    if not isinstance(old, int) or not isinstance(k.get("k_steps"), int) or k["k_steps"] < 1 \
            or old % k["k_steps"] or args[3] != old or args[6] != old:
        pytest.fail("the compile handed back no usable shapes", pytrace=False)
    bk = old // k["k_steps"]
    args[2] = args[3] = args[6] = k_steps * bk
    return args


@pytest.mark.points(2)
@pytest.mark.timeout(300)
def test_many_laps():
    """A ring of at least 2 stages (with one, the consumers release slot it - 1 only after their
    wait in k-step it, which needs that very slot refilled: a deadlock), and every protocol rule
    in every k-step of 9-20 laps of the ring, K drawn each run: a parity that is right for the
    first laps only fails here."""
    k = pub.compiled()
    stages = k.get("stages")
    assert isinstance(stages, int) and stages >= 2, (
        f"STAGES = {stages}: the consumers keep one wgmma in flight (wgmma_wait(1)) and release "
        "a slot one k-step late, so a ring needs at least 2 stages")
    n = stages * LAPS + rng.randint(0, stages - 1)
    ir = k.get("ttgir_ws") or k.get("ttgir")
    found = pub.protocol.judge(ir, stages, n, _longer_k(k, n))
    bad = {r: m for r, m in found.items() if m}
    assert not bad, f"{n} k-steps: " + "\n".join(f"{r}: {m}" for r, ms in bad.items() for m in ms)
